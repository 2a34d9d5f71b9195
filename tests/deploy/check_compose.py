#!/usr/bin/env python3
"""Checks deploy/compose.yaml and deploy/compose.cuda.yaml (read with helmrender --yaml2json).

    check_compose.py --helmrender BIN --deploy-dir deploy
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys


class CheckError(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise CheckError(msg)


def load(helmrender, path):
    p = subprocess.run([helmrender, "--yaml2json", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "%s does not parse: %s" % (path, p.stderr))
    docs = json.loads(p.stdout)
    check(len(docs) == 1, "%s: expected one YAML document" % path)
    return docs[0]


def flags(cmd):
    out = {}
    for a in cmd[1:]:
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def flag1(cmd, name):
    v = flags(cmd).get(name, [])
    check(len(v) == 1, "%s: expected one --%s, got %s" % (cmd[0], name, v))
    return v[0]


def seconds(s):
    m = re.match(r"^(\d+)s$", str(s))
    check(m, "duration %r is not in seconds" % s)
    return int(m.group(1))


def check_base(c):
    svcs = c["services"]
    for name in ("redis", "jaeger", "loader", "executor", "scheduler"):
        check(name in svcs, "service %s missing" % name)
    redis = svcs["redis"]
    argv = redis["command"]
    check(argv[argv.index("--appendonly") + 1] == "yes", "redis must run with --appendonly yes")
    data = [v for v in redis["volumes"] if v.endswith(":/data")]
    check(data and data[0].split(":")[0] in c["volumes"], "redis /data must be a named volume")
    jaeger = svcs["jaeger"]
    check(jaeger["image"].startswith("jaegertracing/all-in-one:"), "jaeger runs the all-in-one image")
    check(str(jaeger["environment"].get("COLLECTOR_OTLP_ENABLED")).lower() == "true", "jaeger OTLP on")
    check({"16686:16686", "4317:4317"} <= {p.split()[0] for p in jaeger["ports"]}, "jaeger ports 16686 and 4317")
    check("models" in c["volumes"], "a models volume")

    ports = {"scheduler": 50051, "loader": 50052, "executor": 50053}
    binaries = {"scheduler": "unmask-scheduler", "loader": "unmask-loader", "executor": "unmask-executor"}
    for name, port in ports.items():
        s = svcs[name]
        cmd = s["command"]
        check(cmd[0] == binaries[name], "%s runs %s" % (name, cmd[0]))
        check(flag1(cmd, "listen") == "0.0.0.0:%d" % port, "%s listens on %d" % (name, port))
        check(flag1(cmd, "otlp-endpoint") == "jaeger:4317", "%s exports spans to jaeger:4317" % name)
        drain = int(flag1(cmd, "drain-timeout-seconds"))
        check(seconds(s["stop_grace_period"]) > drain, "%s: stop_grace_period must exceed the drain timeout" % name)
        check(str(s.get("user", "0")).split(":")[0] not in ("0", "root"), "%s must run as non-root" % name)
        test = s["healthcheck"]["test"]
        check(test[:3] == ["CMD", "unmask", "health"] and test[3] == "--addr=127.0.0.1:%d" % port,
              "%s health check must be `unmask health --addr=127.0.0.1:%d`: %s" % (name, port, test))
    loader, executor, sched = svcs["loader"], svcs["executor"], svcs["scheduler"]
    check(loader.get("ipc") == "shareable" and loader.get("shm_size"), "loader: ipc shareable with a shm_size")
    check(executor.get("ipc") == "service:loader", "executor must share the loader's IPC namespace")
    check(executor["depends_on"]["loader"]["condition"] == "service_healthy", "executor waits for a healthy loader")
    check(flag1(executor["command"], "loader") == "loader:50052", "executor --loader")
    check(any(v.startswith("models:/models") for v in loader["volumes"]), "loader mounts the models volume")
    check(flag1(loader["command"], "model-root") == "/models", "loader --model-root")
    check(flag1(sched["command"], "redis") == "redis:6379", "scheduler --redis")
    check(flag1(sched["command"], "executors") == "executor:50053", "scheduler --executors")
    check(sched["depends_on"]["redis"]["condition"] == "service_healthy", "scheduler waits for Redis")
    check(flag1(sched["command"], "api-keys-file") == "/run/secrets/api-keys" and "api-keys" in sched["secrets"],
          "scheduler reads its API keys from the api-keys secret")
    check("api-keys" in c["secrets"], "api-keys secret declared")
    # Text and chat prompts are encoded by the scheduler: it needs the tokenizers.
    check(flag1(sched["command"], "model-root") == "/models", "scheduler --model-root=/models (tokenizers)")
    check("models:/models:ro" in sched.get("volumes", []), "scheduler mounts the models volume read-only")
    http = flag1(sched["command"], "http-port")
    check(any(str(p).endswith(":" + http) for p in sched.get("ports", [])),
          "the scheduler's HTTP API (--http-port=%s) is published" % http)
    # Debian 12's docker-compose 1.29 refuses a top-level name (the project is named with -p).
    check("name" not in c, "compose.yaml must not set a top-level name (docker-compose 1.29 refuses it)")


def check_cuda(c):
    svcs = c["services"]
    ids = []
    for name in ("loader", "executor"):
        s = svcs[name]
        check("cuda" in s["image"], "%s uses the CUDA image" % name)
        if name == "executor":  # the loader has no --device
            check(flag1(s["command"], "device") == "cuda:0", "%s --device=cuda:0" % name)
        devs = s["deploy"]["resources"]["reservations"]["devices"]
        check(len(devs) == 1 and devs[0]["driver"] == "nvidia" and "gpu" in devs[0]["capabilities"], "%s reserves a GPU" % name)
        ids.append(devs[0]["device_ids"])
    check(ids[0] == ids[1], "loader and executor must use the same GPU")
    check(svcs["executor"].get("pid") == "service:loader", "executor shares the loader's PID namespace (CUDA IPC)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helmrender", required=True)
    ap.add_argument("--deploy-dir", required=True)
    a = ap.parse_args()
    base = load(a.helmrender, os.path.join(a.deploy_dir, "compose.yaml"))
    cuda = load(a.helmrender, os.path.join(a.deploy_dir, "compose.cuda.yaml"))
    try:
        check_base(base)
        check_cuda(cuda)
    except CheckError as e:
        print("FAIL: %s" % e, file=sys.stderr)
        return 1
    # The checks must be able to fail.
    mutations = {
        "AOF off": lambda c: c["services"]["redis"]["command"].__setitem__(2, "no"),
        "no shared IPC": lambda c: c["services"]["executor"].pop("ipc"),
        "scheduler without tokenizers": lambda c: c["services"]["scheduler"].pop("volumes"),
        "HTTP API not published": lambda c: c["services"]["scheduler"].__setitem__(
            "ports", [p for p in c["services"]["scheduler"]["ports"] if not str(p).endswith(":8000")]),
        "a top-level name": lambda c: c.__setitem__("name", "unmask"),
        "grace too short": lambda c: c["services"]["loader"].__setitem__("stop_grace_period", "10s"),
        "health on the wrong port": lambda c: c["services"]["executor"]["healthcheck"]["test"].__setitem__(3, "--addr=127.0.0.1:50052"),
        "root user": lambda c: c["services"]["scheduler"].__setitem__("user", "0"),
        "not all-in-one": lambda c: c["services"]["jaeger"].__setitem__("image", "jaegertracing/jaeger-collector:1.57.0"),
    }
    for why, mutate in mutations.items():
        c = copy.deepcopy(base)
        mutate(c)
        try:
            check_base(c)
        except CheckError as e:
            print("caught %s: %s" % (why, e))
            continue
        print("FAIL: a broken compose file passed: %s" % why, file=sys.stderr)
        return 1
    c = copy.deepcopy(cuda)
    c["services"]["executor"]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] = ["1"]
    try:
        check_cuda(c)
        print("FAIL: different GPUs passed", file=sys.stderr)
        return 1
    except CheckError as e:
        print("caught different GPUs: %s" % e)
    print("compose files OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
