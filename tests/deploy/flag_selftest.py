#!/usr/bin/env python3
"""check_flags.py --selftest: broken manifests, compose files, Dockerfiles and examples must be
caught, each with a message naming the file, the container (or service) and the flag; the good
ones must pass. Uses the real binaries' --help. Python 3 stdlib only."""
import copy
import os
import tempfile

from flag_sources import compose_invocations, dockerfile_invocations, k8s_invocations, text_file_invocations


def pod(source, kind, name, containers, init=(), probe=None):
    spec = {"containers": list(containers), "initContainers": list(init)}
    if probe:
        spec["containers"][0]["livenessProbe"] = {"exec": {"command": probe}}
    o = {"kind": kind, "metadata": {"name": name}, "spec": spec if kind == "Pod" else {"template": {"spec": spec}}}
    return {"source": source, "object": o}


def good_docs():
    return [
        {"source": "unmask/templates/configmap.yaml",
         "object": {"kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"ROOT": "/models", "NBATCH": "8"}}},
        pod("unmask/templates/worker-statefulset.yaml", "StatefulSet", "llm-unmask-worker", [
            {"name": "loader", "command": ["unmask-loader"], "envFrom": [{"configMapRef": {"name": "cfg"}}],
             "args": ["--listen=0.0.0.0:50052", "--model-root=$(ROOT)", "--preload", "A:bf16", "B", "--default-precision=bf16"]},
            {"name": "executor-0", "command": ["unmask-executor"], "envFrom": [{"configMapRef": {"name": "cfg"}}],
             "args": ["--model=A", "--max-batch=$(NBATCH)", "--loader", "127.0.0.1:50052"]}]),
        pod("unmask/templates/tests/test-generate.yaml", "Pod", "llm-unmask-test-generate", [
            {"name": "generate", "command": ["unmask"],
             "args": ["--scheduler", "sched:50051", "--api-key-file=/k", "generate", "--model=A", "--json"]}],
            init=[{"name": "health", "command": ["unmask"], "args": ["health", "--addr=sched:50051"]}]),
        pod("unmask/templates/wrapped.yaml", "Deployment", "llm-unmask-wrapped", [
            {"name": "wrapped", "image": "x", "command": ["/bin/sh", "-c"],
             "args": ["echo start; exec /usr/local/bin/unmask-scheduler --listen=0.0.0.0:50051 --redis= 2>&1"]}],
            probe=["unmask", "health", "--addr=127.0.0.1:50051"]),
        pod("redis-statefulset.yaml", "StatefulSet", "redis", [
            {"name": "redis", "command": ["redis-server"], "args": ["--appendonly", "yes"]}]),
    ]


def containers_of(docs, name):
    for d in docs:
        spec = d["object"].get("spec", {})
        spec = spec.get("template", {}).get("spec", spec)
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            if c["name"] == name:
                return c
    raise KeyError(name)


def args_of(name):
    return lambda d: containers_of(d, name)["args"]


K8S_BROKEN = [
    ("--flag=value", lambda d: args_of("executor-0")(d).append("--bogus-flag=1"),
     ["worker-statefulset.yaml", "StatefulSet/llm-unmask-worker", "container executor-0", "--bogus-flag"]),
    ("--flag value", lambda d: args_of("loader")(d).extend(["--preload-all", "yes"]),
     ["container loader", "--preload-all"]),
    ("in sh -c", lambda d: args_of("wrapped")(d).__setitem__(0, args_of("wrapped")(d)[0].replace("--redis=", "--redis-addr=")),
     ["container wrapped", "unmask-scheduler does not accept --redis-addr"]),
    ("in an exec probe", lambda d: containers_of(d, "wrapped")["livenessProbe"]["exec"]["command"].append("--adress=x"),
     ["container wrapped livenessProbe", "--adress"]),
    ("top-level flag after the subcommand", lambda d: args_of("generate")(d).append("--timeout=5"),
     ["container generate", "--timeout", "before the subcommand generate"]),
    ("another subcommand's flag", lambda d: args_of("health")(d).append("--model=A"),
     ["container health", "unmask health does not accept --model"]),
    ("unknown subcommand", lambda d: args_of("generate")(d).__setitem__(3, "generat"),
     ["container generate", "no subcommand 'generat'"]),
    ("a one-value option twice (aliases)", lambda d: args_of("executor-0")(d).append("--max-concurrent-jobs=4"),
     ["container executor-0", "--max-batch takes one value but is given 2 times"]),
    ("a value missing", lambda d: args_of("executor-0")(d).append("--loader"),
     ["container executor-0", "--loader of unmask-executor needs a value"]),
]

GOOD_COMPOSE = {"services": {
    "loader": {"command": ["unmask-loader", "--model-root=/models", "--preload=${UNMASK_MODEL:-M}:bf16"],
               "healthcheck": {"test": ["CMD", "unmask", "health", "--addr=127.0.0.1:50052"]}},
    "executor": {"command": "unmask-executor --model=${UNMASK_MODEL:?set it}",
                 "healthcheck": {"test": ["CMD-SHELL", "unmask health --addr=127.0.0.1:50053 || exit 1"]}},
    "redis": {"command": ["redis-server", "--appendonly", "yes"], "healthcheck": {"test": "redis-cli ping"}},
}}

COMPOSE_BROKEN = [
    ("healthcheck CMD", lambda c: c["services"]["loader"]["healthcheck"]["test"].__setitem__(3, "--address=x"),
     ["compose.yaml service loader healthcheck", "--address"]),
    ("healthcheck CMD-SHELL", lambda c: c["services"]["executor"]["healthcheck"]["test"].__setitem__(1, "unmask health --adr=x"),
     ["compose.yaml service executor healthcheck", "--adr"]),
    ("command string", lambda c: c["services"]["executor"].__setitem__("command", "unmask-executor --modle=m"),
     ["compose.yaml service executor command", "--modle"]),
    ("entrypoint + command", lambda c: c["services"]["loader"].update(entrypoint=["tini", "--"], command=["unmask-loader", "--root=/m"]),
     ["compose.yaml service loader command", "--root"]),
]

GOOD_DOCKERFILE = """FROM debian:12 AS build
RUN cmake --build /b --target unmask
FROM debian:12-slim
COPY --from=build /b/unmask /usr/local/bin/unmask
RUN unmask --help >/dev/null && for b in /usr/local/bin/unmask*; do ldd "$b"; done
HEALTHCHECK --interval=10s CMD ["unmask", "health", "--addr=127.0.0.1:50051"]
ENTRYPOINT ["unmask"]
CMD ["--scheduler=127.0.0.1:50051", "models"]
"""

DOCKERFILE_BROKEN = [
    ("HEALTHCHECK exec form", ("--addr=127.0.0.1:50051\"]", "--adress=127.0.0.1:50051\"]"), ["Dockerfile:6 HEALTHCHECK", "--adress"]),
    ("HEALTHCHECK shell form", ('CMD ["unmask", "health", "--addr=127.0.0.1:50051"]', "CMD unmask health --bogus || exit 1"),
     ["Dockerfile:6 HEALTHCHECK", "--bogus"]),
    ("CMD after ENTRYPOINT", ("--scheduler=", "--schedular="), ["Dockerfile:7 ENTRYPOINT", "--schedular"]),
    ("RUN smoke test", ("unmask --help", "unmask --version"), ["Dockerfile:5 RUN", "--version"]),
    ("shell-form CMD", ('ENTRYPOINT ["unmask"]\nCMD ["--scheduler=127.0.0.1:50051", "models"]', "CMD exec unmask-loader --workers=2"),
     ["Dockerfile:7 CMD", "unmask-loader does not accept --workers"]),
]

GOOD_TEXT = """- Generate:

     unmask --scheduler=127.0.0.1:50051 --api-key-file=./api-key generate --model M --prompt "Hello" --json
helm install unmask ./helm/unmask -n inference
docker compose exec scheduler \\
  unmask --scheduler=127.0.0.1:50051 models
Run `unmask-loader --help` for the flags; the CLI is `unmask`.
docker compose -p unmask -f deploy/compose.yaml up --build -d
"""

TEXT_BROKEN = [
    ("NOTES command", ("--model M", "--modle M"), ["NOTES.txt:3", "unmask generate does not accept --modle"]),
    ("continued line", ("50051 models", "50051 models --jsn"), ["NOTES.txt:5", "--jsn"]),
    ("inline code", ("unmask-loader --help", "unmask-loader --hlep"), ["NOTES.txt:7", "--hlep"]),
]


def run(specs, check_all):
    subcommands = set(specs["unmask"][1])
    failures = 0

    def k8s(docs):
        return [("", "helm/unmask " + p, a) for p, a in k8s_invocations(docs)]

    def compose(doc):
        return [("", "deploy/" + p, a) for p, a in compose_invocations("compose.yaml", doc)]

    def dockerfile(text):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "Dockerfile")
            open(path, "w").write(text)
            return [("", "deploy/" + p, a) for p, a in dockerfile_invocations(path)]

    def text(t):
        return [("", p, a) for p, a in text_file_invocations("NOTES.txt", t, subcommands)]

    def expect(why, invocations, want):
        nonlocal failures
        problems = check_all(invocations, specs)
        if not want:
            if problems or not invocations:
                print("FAIL: the good %s was rejected or not read: %s" % (why, problems or "no invocations"))
                failures += 1
            else:
                print("good %s passes (%d invocations)" % (why, len(invocations)))
            return
        hit = [p for p in problems if all(w in p for w in want)]
        if hit:
            print("caught %s: %s" % (why, hit[0]))
        else:
            print("FAIL: not caught as %s (%s): %s" % (why, want, problems))
            failures += 1

    expect("manifests", k8s(good_docs()), None)
    for why, mutate, want in K8S_BROKEN:
        docs = good_docs()
        mutate(docs)
        expect(why, k8s(docs), want)
    expect("compose file", compose(GOOD_COMPOSE), None)
    for why, mutate, want in COMPOSE_BROKEN:
        c = copy.deepcopy(GOOD_COMPOSE)
        mutate(c)
        expect(why, compose(c), want)
    expect("Dockerfile", dockerfile(GOOD_DOCKERFILE), None)
    for why, (old, new), want in DOCKERFILE_BROKEN:
        assert old in GOOD_DOCKERFILE, old
        expect(why, dockerfile(GOOD_DOCKERFILE.replace(old, new)), want)
    expect("example text", text(GOOD_TEXT), None)
    for why, (old, new), want in TEXT_BROKEN:
        assert old in GOOD_TEXT, old
        expect(why, text(GOOD_TEXT.replace(old, new)), want)
    print("self-test: %s" % ("FAILED (%d)" % failures if failures else "every broken file caught"))
    return 1 if failures else 0
