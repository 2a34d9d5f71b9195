#!/usr/bin/env python3
"""Every flag the chart, the compose files and the Dockerfiles pass to an unmask binary exists.

    check_flags.py --binary NAME=PATH ... --deploy-dir deploy [--helmrender BIN --chart helm/unmask]
    check_flags.py --binary NAME=PATH ... --selftest

The binaries' own `--help` (CLI11) is the reference: for the CLI, flags before the subcommand must
be top-level options and flags after it the subcommand's (CLI11 passes nothing through). Checked:
the containers, exec probes and hooks of the chart rendered with several values (and with every
`helm install` example of its README), its NOTES; the compose services' command and healthcheck;
the Dockerfiles' ENTRYPOINT/CMD/HEALTHCHECK/RUN; example commands in the READMEs and compose
comments. Also refused: a one-value option given twice (CLI11 exits), an unknown subcommand.
Python 3 stdlib only.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart_lib  # noqa: E402
import flag_selftest  # noqa: E402
from flag_sources import compose_invocations, dockerfile_invocations, k8s_invocations, text_file_invocations  # noqa: E402
from flag_spec import BINARIES, CLI, check_argv, load_specs  # noqa: E402

# Chart values that change which containers run, or with which arguments.
VARIANTS = [
    [],
    ["--set", "redis.mode=external", "--set", "redis.external.address=redis.prod:6380"],
    ["--set", "redis.mode=none"],
    ["--set", "jaeger.enabled=false"],
    ["--set", "tracing.enabled=false"],
    ["--set", "worker.replicas=2"],
    ["--set", "worker.gpu.enabled=false"],
    ["--set", "worker.executorsPerGpu=3"],
    ["--set", "worker.gpu.mode=dra"],
    ["--set", "metrics.serviceMonitor.enabled=true"],
    ["--set", "scheduler.apiKeys.enabled=false"],
    ["--set", "scheduler.apiKeys.existingSecret=my-keys"],
    ["--set", "models.source=hostPath", "--set", "models.hostPath.path=/srv/models"],
    ["--set", "worker.loader.preload={LLaDA-1.5:int8,Other}", "--set", "scheduler.replicas=3"],
    ["--set", "tests.enabled=false"],
    ["--set", "tls.enabled=true", "--set", "tls.secretName=my-tls"],
    ["--set", "tracing.otlpEndpoint=otel:4317", "--set", "tracing.tls.enabled=true", "--set", "tracing.tls.secretName=otlp",
     "--set", "tracing.tls.clientCertificate=true", "--set", "tracing.tls.serverName=otel.example"],
    ["--set", "metrics.tls.enabled=true", "--set", "metrics.tls.secretName=metrics", "--set",
     "metrics.tls.requireClientCert=true"],
    ["--set", "tls.enabled=true", "--set", "tls.secretName=my-tls", "--set", "tls.requireClientCert=false",
     "--set", "worker.executorsPerGpu=2"],
]


def check_all(invocations, specs):
    """invocations: (values label, place, argv). Returns the problems, one line each, naming the
    place (file, manifest, container), the flag and the chart values it shows up with."""
    found, labels_of = {}, {}
    for label, place, argv in invocations:
        labels_of.setdefault(place, set()).add(label)
        for p in check_argv(argv, specs):
            found.setdefault((place, p), [])
            if label not in found[(place, p)]:
                found[(place, p)].append(label)
    lines = []
    for (place, p), labels in found.items():
        if labels == [""]:
            where = ""
        elif len(labels) > 1 and set(labels) == labels_of[place]:
            where = " [with every values set that renders it]"
        else:
            where = " [%s%s]" % ("; ".join(labels[:2]), "; +%d more" % (len(labels) - 2) if len(labels) > 2 else "")
        lines.append("%s%s: %s" % (place, where, p))
    return lines


def chart_invocations(helmrender, chart, subcommands):
    chart_lib.ARGS = argparse.Namespace(helmrender=helmrender, chart=chart)
    readme = open(os.path.join(chart, "README.md")).read()
    variants = VARIANTS + chart_lib.readme_install_args(readme)
    out = []
    for extra in variants:
        label = "values: " + (" ".join(extra) or "default")
        docs, notes = chart_lib.render(*extra)
        out += [(label, "helm/unmask " + place, argv) for place, argv in k8s_invocations(docs)]
        out += [(label, "helm/unmask " + place, argv)
                for place, argv in text_file_invocations("NOTES.txt", notes, subcommands)]
    out += [("", place, argv) for place, argv in text_file_invocations("helm/unmask/README.md", readme, subcommands)]
    print("chart: %d values sets, %d invocations" % (len(variants), len(out)))
    return out


def deploy_invocations(deploy_dir, helmrender, subcommands):
    out = []
    for f in sorted(os.listdir(deploy_dir)):
        path = os.path.join(deploy_dir, f)
        if re.match(r"^Dockerfile(\.[\w-]+)?$", f):
            out += [("", "deploy/" + place, argv) for place, argv in dockerfile_invocations(path)]
        elif re.match(r"^(docker-)?compose(\.[\w-]+)?\.ya?ml$", f) and helmrender:
            p = subprocess.run([helmrender, "--yaml2json", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                raise RuntimeError("%s does not parse: %s" % (path, p.stderr))
            out += [("", "deploy/" + place, argv) for place, argv in compose_invocations(f, json.loads(p.stdout)[0])]
        if re.match(r"^(README\.md|(docker-)?compose(\.[\w-]+)?\.ya?ml|env\.example)$", f):
            out += [("", "deploy/" + place, argv) for place, argv in text_file_invocations(f, open(path).read(), subcommands)]
    print("deploy: %d invocations" % len(out))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", action="append", default=[], help="NAME=PATH of a built binary (TARGET_FILE)")
    ap.add_argument("--deploy-dir")
    ap.add_argument("--helmrender", help="helmrender binary: renders the chart and reads the compose files")
    ap.add_argument("--chart")
    ap.add_argument("--selftest", action="store_true", help="check that broken files are caught")
    a = ap.parse_args()
    paths = dict(b.split("=", 1) for b in a.binary)
    for need in (CLI, "unmask-loader", "unmask-executor", "unmask-scheduler"):
        if need not in paths:
            ap.error("--binary %s=PATH is required" % need)
    unknown = set(paths) - set(BINARIES)
    if unknown:
        ap.error("unknown binaries %s" % sorted(unknown))
    try:
        specs = load_specs(paths)
    except (RuntimeError, ValueError, subprocess.SubprocessError) as e:
        print("FAIL: %s" % e, file=sys.stderr)
        return 1
    for name, (top, subs) in sorted(specs.items()):
        print("%s: %d options%s" % (name, len(top.long_names()), ", subcommands " + " ".join(subs) if subs else ""))
    if a.selftest:
        return flag_selftest.run(specs, check_all)
    if not a.deploy_dir:
        ap.error("--deploy-dir is required")
    subcommands = set(specs[CLI][1])
    invocations = []
    try:
        if a.helmrender and a.chart:
            invocations += chart_invocations(a.helmrender, a.chart, subcommands)
        invocations += deploy_invocations(a.deploy_dir, a.helmrender, subcommands)
    except (chart_lib.CheckError, RuntimeError) as e:
        print("FAIL: %s" % e, file=sys.stderr)
        return 1
    ran = {os.path.basename(argv[0]) for _, _, argv in invocations}
    missing = {"unmask-loader", "unmask-executor", "unmask-scheduler", CLI} - ran
    problems = check_all(invocations, specs)
    if a.helmrender and missing:
        problems.append("no invocation of %s found: the collectors are broken" % sorted(missing))
    for p in problems:
        print("FAIL " + p, file=sys.stderr)
    print("%d invocations of %s checked, %d problem(s)" % (len(invocations), ", ".join(sorted(ran)), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
