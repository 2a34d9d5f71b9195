#!/usr/bin/env python3
"""Where the deployment files run the unmask binaries: (place, argv) pairs, for check_flags.py.

A place names the file, the manifest or service and the container, e.g.
"unmask/templates/worker-statefulset.yaml StatefulSet/llm-unmask-worker container executor-0".
Python 3 stdlib only.
"""
import json
import os
import re
import shlex

from flag_spec import argv_invocations, script_invocations, text_invocations
from lint_containers import exec_form, instructions

# --------------------------------------------------------------------------------------------
# Kubernetes manifests (helmrender --json: [{"source": ..., "object": ...}])


def pod_specs(o):
    spec = o.get("spec") or {}
    if o.get("kind") == "Pod":
        return [spec]
    if o.get("kind") == "CronJob":
        return [spec["jobTemplate"]["spec"]["template"]["spec"]]
    if "template" in spec:
        return [spec["template"]["spec"]]
    return []


def kubelet_env(docs, c):
    """The variables the kubelet expands $(NAME) with: envFrom ConfigMaps, then env values."""
    env = {}
    cms = {d["object"]["metadata"]["name"]: d["object"].get("data") or {} for d in docs
           if d["object"].get("kind") == "ConfigMap"}
    for ef in c.get("envFrom") or []:
        env.update(cms.get((ef.get("configMapRef") or {}).get("name"), {}))
    for e in c.get("env") or []:
        if "value" in e:
            env[e["name"]] = e["value"]
    return env


def kubelet_expand(words, env):
    def one(w):
        return re.sub(r"\$\$|\$\(([A-Za-z_]\w*)\)",
                      lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), w)
    return [one(str(w)) for w in words or []]


def k8s_invocations(docs):
    """Containers (init and regular), their exec probes and lifecycle hooks that run a binary.
    Without `command` the argv is `args` alone: the unmask images have no ENTRYPOINT."""
    out = []
    for d in docs:
        o = d["object"]
        for spec in pod_specs(o):
            for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
                place = "%s %s/%s container %s" % (d["source"], o["kind"], o["metadata"]["name"], c["name"])
                env = kubelet_env(docs, c)
                argv = kubelet_expand((c.get("command") or []) + (c.get("args") or []), env)
                out += [(place, a) for a in argv_invocations(argv)]
                hooks = [(p, c.get(p) or {}) for p in ("startupProbe", "livenessProbe", "readinessProbe")]
                hooks += [("lifecycle." + h, v) for h, v in (c.get("lifecycle") or {}).items()]
                for what, h in hooks:
                    cmd = (h.get("exec") or {}).get("command")
                    if cmd:
                        out += [("%s %s" % (place, what), a) for a in argv_invocations(cmd)]
    return out


# --------------------------------------------------------------------------------------------
# Compose files (helmrender --yaml2json)


def compose_interpolate(s):
    """${VAR:-default} / ${VAR-default} -> default, ${VAR:?err} / ${VAR} / $VAR -> "", $$ -> $."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        op, default = m.group(2), m.group(3)
        return default if op in (":-", "-") else ""
    return re.sub(r"\$\$|\$\{(\w+)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|\$(?=\w)\w+", sub, str(s))


def compose_argv(v):
    if v is None:
        return []
    return [compose_interpolate(w) for w in (shlex.split(v) if isinstance(v, str) else v)]


def compose_invocations(name, doc):
    out = []
    for svc, spec in (doc.get("services") or {}).items():
        place = "%s service %s" % (name, svc)
        entry, cmd = compose_argv(spec.get("entrypoint")), compose_argv(spec.get("command"))
        out += [(place + " command", a) for a in argv_invocations(entry + cmd if entry else cmd)]
        test = (spec.get("healthcheck") or {}).get("test")
        if isinstance(test, str):
            out += [(place + " healthcheck", a) for a in script_invocations(compose_interpolate(test))]
        elif test and test[0] == "CMD":
            out += [(place + " healthcheck", a) for a in argv_invocations(compose_argv(test[1:]))]
        elif test and test[0] == "CMD-SHELL":
            out += [(place + " healthcheck", a) for a in script_invocations(compose_interpolate(" ".join(test[1:])))]
    return out


# --------------------------------------------------------------------------------------------
# Dockerfiles


def dockerfile_invocations(path):
    """ENTRYPOINT + CMD of every stage (as Docker combines them), HEALTHCHECK CMD, and RUN lines
    that run a binary (a smoke test of the image)."""
    name = os.path.basename(path)
    out = []
    stage = None

    def finish():
        if stage and (stage["entrypoint"] or stage["cmd"]):
            ep, cmd = stage["entrypoint"], stage["cmd"]
            if ep and ep[1] == "shell":  # a shell-form ENTRYPOINT ignores CMD
                out.extend((ep[0], a) for a in script_invocations(ep[2]))
                return
            argv = (ep[2] if ep else []) + (cmd[2] if cmd and cmd[1] == "exec" else [])
            if cmd and cmd[1] == "shell" and not ep:
                out.extend((cmd[0], a) for a in script_invocations(cmd[2]))
                return
            out.extend(((ep or cmd)[0], a) for a in argv_invocations(argv))

    def form(where, rest):
        return (where, "exec", exec_form(rest)) if rest.startswith("[") else (where, "shell", rest)

    for line, ins, rest in instructions(open(path).read()):
        where = "%s:%d %s" % (name, line, ins)
        if ins == "FROM":
            finish()
            stage = {"entrypoint": None, "cmd": None}
        elif ins == "ENTRYPOINT" and stage is not None:
            stage["entrypoint"] = form(where, rest)
        elif ins == "CMD" and stage is not None:
            stage["cmd"] = form(where, rest)
        elif ins == "HEALTHCHECK":
            m = re.match(r"^(?:--\S+\s+)*CMD\s+(.*)$", rest, re.S | re.I)
            if m:
                f = form(where, m.group(1).strip())
                invs = argv_invocations(f[2]) if f[1] == "exec" else script_invocations(f[2])
                out.extend((where, a) for a in invs)
        elif ins == "RUN":
            body = rest
            while body.startswith("--"):  # RUN --mount=... --network=...
                body = body.split(None, 1)[1] if " " in body else ""
            invs = argv_invocations(json.loads(body)) if body.startswith("[") else script_invocations(body)
            out.extend((where, a) for a in invs)
    finish()
    return out


# --------------------------------------------------------------------------------------------
# Prose: NOTES.txt, READMEs, comments with example commands


def text_file_invocations(name, text, subcommands):
    return [("%s:%d" % (name, n), a) for n, a in text_invocations(text, subcommands)]
