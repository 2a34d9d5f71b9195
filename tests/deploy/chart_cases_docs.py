"""check_chart.py's cases of what users read and write: a values file, values.schema.json
against values.yaml, and the chart README's values table and install examples."""
import json
import os
import re
import subprocess
import tempfile

import chart_lib
from chart_lib import *  # noqa: F401,F403
from chart_registry import case


@case
def values_file():
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("scheduler:\n  replicas: 3\n  dispatchPolicy: round_robin\ntracing:\n  sampleRatio: 0.25\n"
                "drainTimeoutSeconds: 60\nterminationGracePeriodSeconds: 90\n"
                "worker:\n  loader:\n    preload: [LLaDA-1.5:int8, Other]\n    defaultPrecision: fp16\n")
        path = f.name
    try:
        docs, _ = render("-f", path, "--set", "scheduler.maxQueue=77")
    finally:
        os.unlink(path)
    _, sched = check_scheduler(docs, replicas=3)
    check(flag1(docs, sched, "dispatch-policy") == "round_robin", "dispatch policy from -f")
    check(flag1(docs, sched, "trace-sample-ratio") == "0.25", "sample ratio from -f")
    check(flag1(docs, sched, "max-queue") == "77", "--set wins over values")
    check(flag1(docs, sched, "drain-timeout-seconds") == "60", "drain timeout from -f")
    sts = check_worker(docs)
    loader = container(sts, "loader")
    check(flag(docs, loader, "preload") == ["LLaDA-1.5:int8", "Other"], "preload list %s" % flag(docs, loader, "preload"))
    check(flag1(docs, loader, "default-precision") == "fp16", "default precision")
    check(flag1(docs, container(sts, "executor-0"), "model") == "LLaDA-1.5", "executor model = first preload without precision")
    check(pod_spec(sts)["terminationGracePeriodSeconds"] == 90, "grace period from -f")


@case
def schema():
    schema_path = os.path.join(chart_lib.ARGS.chart, "values.schema.json")
    with open(schema_path) as f:
        sch = json.load(f)
    check(sch.get("$schema") == "http://json-schema.org/draft-07/schema#", "schema must be draft-07")
    p = run_renderer(["--validate-only"])
    check(p.returncode == 0, "default values must validate: %s" % p.stderr)
    p = subprocess.run([chart_lib.ARGS.helmrender, "--yaml2json", os.path.join(chart_lib.ARGS.chart, "values.yaml")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, p.stderr)
    values = json.loads(p.stdout)[0]

    def resolve(node):
        while "$ref" in node:
            node = sch["definitions"][node["$ref"].split("/")[-1]]
        return node

    # Every value is in the schema, with a type and a description.
    def walk(vals, node, path):
        node = resolve(node)
        props = node.get("properties")
        if not isinstance(vals, dict) or props is None:
            return
        for k, v in vals.items():
            check(k in props, "values.yaml %s%s is not in values.schema.json" % (path, k))
            sub = props[k]
            check("description" in sub, "schema of %s%s has no description" % (path, k))
            check("type" in resolve(sub), "schema of %s%s has no type" % (path, k))
            walk(v, sub, path + k + ".")
    walk(values, sch, "")

    # Every value is documented: a comment right above its key (free-form maps excepted).
    documented = set()
    stack = []
    lines = open(os.path.join(chart_lib.ARGS.chart, "values.yaml")).read().splitlines()
    for n, line in enumerate(lines):
        m = re.match(r"^( *)([A-Za-z0-9_.-]+):", line)
        if not m:
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m.group(2)))
        path = [k for _, k in stack]
        node = sch
        described = True
        for k in path:
            node = resolve(node)
            if k not in node.get("properties", {}):
                described = False  # inside a free-form object (resources, securityContext, ...)
                break
            node = node["properties"][k]
        if not described:
            continue
        prev = lines[n - 1].strip() if n > 0 else ""
        check(prev.startswith("#"), "values.yaml line %d: %s has no comment above it" % (n + 1, ".".join(path)))
        documented.add(".".join(path))
    check(len(documented) > 80, "only %d documented values found" % len(documented))
    print("%d values documented and in the schema" % len(documented))


@case
def readme():
    """helm/unmask/README.md lists every value and its install examples render."""
    text = open(os.path.join(chart_lib.ARGS.chart, "README.md")).read()
    rows = re.findall(r"^\| `([A-Za-z0-9_.]+)` \| `(.*?)` \|", text, re.M)
    check(rows, "README.md has no values table")
    with open(os.path.join(chart_lib.ARGS.chart, "values.schema.json")) as f:
        sch = json.load(f)
    p = subprocess.run([chart_lib.ARGS.helmrender, "--yaml2json", os.path.join(chart_lib.ARGS.chart, "values.yaml")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    values = json.loads(p.stdout)[0]

    def resolve(node):
        while "$ref" in node:
            node = sch["definitions"][node["$ref"].split("/")[-1]]
        return node

    leaves = {}

    def walk(v, node, path):
        props = resolve(node).get("properties")
        if isinstance(v, dict) and props and set(v) <= set(props) and not set(props) <= {"requests", "limits"}:
            for k, sub in v.items():
                walk(sub, props[k], path + [k])
        else:
            leaves[".".join(path)] = v
    for k, v in values.items():
        walk(v, sch["properties"][k], [k])
    table = {k: d for k, d in rows}
    missing = sorted(set(leaves) - set(table))
    stale = sorted(set(table) - set(leaves))
    check(not missing, "README.md values table lacks %s" % missing)
    check(not stale, "README.md values table lists unknown values %s" % stale)
    for k, d in table.items():
        check(json.loads(d.replace("\\|", "|")) == leaves[k], "README.md default of %s is %s, values.yaml has %s" % (k, d, json.dumps(leaves[k])))
    # Every `helm install` example renders.
    examples = readme_install_args(text)
    check(len(examples) >= 4, "README.md install examples not found")
    for args in examples:
        render(*args)
    print("%d values in the README table, %d install examples render" % (len(table), len(examples)))
