#!/usr/bin/env python3
"""Checks of the helm/unmask chart, rendered by tools/helmrender (no helm binary needed).

    check_chart.py --helmrender BIN --chart helm/unmask --case NAME
    check_chart.py --list

Each case renders the chart with some values and asserts on the manifests; the fail_* cases
assert that wrong values are refused with the chart's own message. Python 3 stdlib only: the
renderer prints JSON (--json), so no YAML parser is needed here.
"""
import argparse
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart_lib  # noqa: E402
from chart_lib import *  # noqa: E402,F401,F403
from chart_registry import CASES, case  # noqa: E402
# The cases, registered in this order (--list, and CTest's tests): each module by concern.
import chart_cases_core  # noqa: E402,F401
import chart_cases_tls  # noqa: E402,F401
import chart_cases_docs  # noqa: E402,F401
import chart_cases_refusals  # noqa: E402,F401


@case
def selftest():
    """The checks above must catch broken manifests (a check that cannot fail proves nothing)."""
    docs, _ = render()

    def broken(mutate, why):
        d = copy.deepcopy(docs)
        mutate(d)
        try:
            check_common(d)
            check_scheduler(d)
            check_worker(d)
            check_redis_bundled(d)
            check_test_hook(d, "LLaDA-8B-Instruct")
        except CheckError as e:
            print("caught %s: %s" % (why, e))
            return
        raise CheckError("a broken manifest passed the checks: " + why)

    def worker_spec(d):
        return pod_spec(one(d, "StatefulSet", "worker"))

    def sched(d):
        return container(one(d, "Deployment", "scheduler"), "scheduler")

    def drop_arg(d, prefix):
        sched(d)["args"] = [a for a in sched(d)["args"] if not a.startswith(prefix)]

    def sched_volume(d, name):
        return [v for v in pod_spec(one(d, "Deployment", "scheduler"))["volumes"] if v["name"] == name][0]

    broken(lambda d: worker_spec(d).pop("shareProcessNamespace"), "no shareProcessNamespace")
    broken(lambda d: worker_spec(d)["volumes"][0]["emptyDir"].pop("medium"), "/dev/shm on disk")
    broken(lambda d: worker_spec(d).__setitem__("terminationGracePeriodSeconds", 30), "grace == drain")
    broken(lambda d: worker_spec(d)["containers"][1]["readinessProbe"]["grpc"].__setitem__("port", 50052), "probe on the wrong port")
    broken(lambda d: worker_spec(d)["containers"][0].__setitem__("livenessProbe", {"tcpSocket": {"port": 50052}}), "non-gRPC probe")
    broken(lambda d: worker_spec(d)["containers"][0]["resources"].pop("limits"), "no GPU limit")
    broken(lambda d: one(d, "Service", "worker")["spec"].pop("clusterIP"), "service not headless")
    broken(lambda d: container(one(d, "StatefulSet", "redis"), "redis")["args"].__setitem__(1, "no"), "AOF off")
    broken(lambda d: objs(d, "Pod")[0]["metadata"]["annotations"].pop("helm.sh/hook"), "test pod without hook")
    broken(lambda d: worker_spec(d)["containers"][0].__setitem__("command", ["/bin/loader"]), "unknown binary")
    broken(lambda d: one(d, "ConfigMap", None)["data"].pop("UNMASK_MODEL"), "unresolved $(VAR)")
    broken(lambda d: d[0]["object"]["metadata"].pop("name"), "manifest without a name")
    def inline_settings(d):  # the settings copied into env instead of read from the ConfigMap
        c = worker_spec(d)["containers"][1]
        c["env"] = [{"name": k, "value": v} for k, v in one(d, "ConfigMap", None)["data"].items()]
        c.pop("envFrom")
    broken(inline_settings, "settings not from the chart's ConfigMap")
    broken(lambda d: drop_arg(d, "--model-root="), "scheduler without --model-root")
    broken(lambda d: [m for m in sched(d)["volumeMounts"] if m["name"] == "models"][0].pop("readOnly"),
           "scheduler mounts the models read-write")
    broken(lambda d: sched_volume(d, "models").__setitem__("hostPath", {"path": "/models"}), "scheduler models volume drifts")
    broken(lambda d: drop_arg(d, "--http-port="), "HTTP port declared, API not served")
    broken(lambda d: one(d, "Service", "scheduler")["spec"]["ports"].pop(), "no Service port for the HTTP API")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--helmrender")
    ap.add_argument("--chart")
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--list", action="store_true", help="print the case names, one per line")
    chart_lib.ARGS = ap.parse_args()
    if chart_lib.ARGS.list:
        print("\n".join(CASES))
        return 0
    if not chart_lib.ARGS.helmrender or not chart_lib.ARGS.chart:
        ap.error("--helmrender and --chart are required")
    if not os.access(chart_lib.ARGS.helmrender, os.X_OK):
        print("helmrender not found at %s (build the helmrender target)" % chart_lib.ARGS.helmrender, file=sys.stderr)
        return 1
    names = chart_lib.ARGS.case or list(CASES)
    failed = 0
    for name in names:
        if name not in CASES:
            print("unknown case %s" % name, file=sys.stderr)
            return 2
        try:
            CASES[name]()
            print("PASS %s" % name)
        except CheckError as e:
            failed += 1
            print("FAIL %s: %s" % (name, e), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
