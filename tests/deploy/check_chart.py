#!/usr/bin/env python3
"""Checks of the helm/unmask chart, rendered by tools/helmrender (no helm binary needed).

    check_chart.py --helmrender BIN --chart helm/unmask --case NAME
    check_chart.py --list

Each case renders the chart with some values and asserts on the manifests; the fail_* cases
assert that wrong values are refused with the chart's own message. Python 3 stdlib only: the
renderer prints JSON (--json), so no YAML parser is needed here.
"""
import argparse
import base64
import copy
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

BINARIES = {"unmask-loader", "unmask-executor", "unmask-scheduler", "unmask", "unmask-engine"}
UNMASK_IMAGES = ("unmask/unmask-cpu:", "unmask/unmask-cuda:")
NAMESPACE = "inference"
RELEASE = "llm"
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*$")

ARGS = None


class CheckError(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise CheckError(msg)


# --------------------------------------------------------------------------------------------
# Rendering


def run_renderer(extra):
    cmd = [ARGS.helmrender, ARGS.chart, "--name", RELEASE, "--namespace", NAMESPACE] + extra
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def render(*extra):
    """Renders with extra flags; returns (manifests, notes)."""
    p = run_renderer(["--json"] + list(extra))
    check(p.returncode == 0, "render %s failed (exit %d):\n%s" % (" ".join(extra), p.returncode, p.stderr))
    out = json.loads(p.stdout)
    docs = out["manifests"]
    check_common(docs)
    return docs, out["notes"]


def render_fails(extra, *expected):
    """Asserts that rendering with extra flags fails with every expected message."""
    p = run_renderer(list(extra))
    check(p.returncode != 0, "render %s should have failed but succeeded" % " ".join(extra))
    for e in expected:
        check(e in p.stderr, "render %s: error should contain %r, got:\n%s" % (" ".join(extra), e, p.stderr))
    print("refused as expected: %s" % p.stderr.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------
# Helpers over manifests


def objs(docs, kind=None, component=None):
    out = []
    for d in docs:
        o = d["object"]
        if kind and o.get("kind") != kind:
            continue
        labels = o.get("metadata", {}).get("labels", {}) or {}
        if component and labels.get("app.kubernetes.io/component") != component:
            continue
        out.append(o)
    return out


def one(docs, kind, component):
    found = objs(docs, kind, component)
    check(len(found) == 1, "expected one %s of component %s, found %d" % (kind, component, len(found)))
    return found[0]


def none_of(docs, kind, component=None):
    found = objs(docs, kind, component)
    check(not found, "expected no %s%s, found %s" % (kind, " of component " + component if component else "",
                                                    [o["metadata"]["name"] for o in found]))


def pod_spec(o):
    if o["kind"] == "Pod":
        return o["spec"]
    return o["spec"]["template"]["spec"]


def containers(o, init=False):
    spec = pod_spec(o)
    return spec.get("containers", []) + (spec.get("initContainers", []) if init else [])


def container(o, name):
    for c in containers(o, init=True):
        if c["name"] == name:
            return c
    raise CheckError("%s %s has no container %s" % (o["kind"], o["metadata"]["name"], name))


def configmap(docs):
    return one(docs, "ConfigMap", None)["data"] if len(objs(docs, "ConfigMap")) == 1 else None


def env_of(docs, c):
    """The container's environment: its envFrom ConfigMaps, then env (values only)."""
    env = {}
    cms = {o["metadata"]["name"]: o.get("data", {}) for o in objs(docs, "ConfigMap")}
    for ef in c.get("envFrom", []) or []:
        ref = ef.get("configMapRef")
        if ref:
            check(ref["name"] in cms, "container %s: envFrom ConfigMap %s is not rendered" % (c["name"], ref["name"]))
            env.update(cms[ref["name"]])
    for e in c.get("env", []) or []:
        if "value" in e:
            env[e["name"]] = e["value"]
    return env


def expanded_args(docs, c):
    """args with $(VAR) expanded the way the kubelet does; every reference must resolve."""
    env = env_of(docs, c)
    out = []
    for a in c.get("args", []) or []:
        for ref in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a):
            check(ref in env, "container %s: arg %r refers to $(%s), which is not in its environment" % (c["name"], a, ref))
        out.append(re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env[m.group(1)], a))
    return out


def flag(docs, c, name):
    """Values of --name=... in the container's expanded args."""
    vals = [a.split("=", 1)[1] for a in expanded_args(docs, c) if a.startswith("--" + name + "=")]
    return vals


def flag1(docs, c, name):
    vals = flag(docs, c, name)
    check(len(vals) == 1, "container %s: expected one --%s, got %s" % (c["name"], name, vals))
    return vals[0]


def is_unmask(c):
    return c.get("image", "").startswith(UNMASK_IMAGES)


def gpu_limit(c, resource="nvidia.com/gpu"):
    return ((c.get("resources") or {}).get("limits") or {}).get(resource)


# --------------------------------------------------------------------------------------------
# Checks run on every successful render


def check_common(docs):
    check(docs, "nothing rendered")
    seen = set()
    for d in docs:
        o = d["object"]
        src = d["source"]
        check(isinstance(o.get("apiVersion"), str) and o["apiVersion"], "%s: no apiVersion" % src)
        check(isinstance(o.get("kind"), str) and o["kind"], "%s: no kind" % src)
        meta = o.get("metadata") or {}
        name = meta.get("name")
        check(isinstance(name, str) and name, "%s: %s without metadata.name" % (src, o["kind"]))
        check(len(name) <= 63 and DNS1123.match(name), "%s: bad name %r" % (src, name))
        check(meta.get("namespace") == NAMESPACE, "%s: %s/%s not in the release namespace" % (src, o["kind"], name))
        key = (o["apiVersion"], o["kind"], name)
        check(key not in seen, "duplicate object %s" % (key,))
        seen.add(key)
        labels = meta.get("labels") or {}
        check(labels.get("app.kubernetes.io/instance") == RELEASE, "%s: %s lacks the instance label" % (src, name))
        if o["kind"] in ("Deployment", "StatefulSet"):
            sel = o["spec"]["selector"]["matchLabels"]
            pod_labels = o["spec"]["template"]["metadata"]["labels"]
            for k, v in sel.items():
                check(pod_labels.get(k) == v, "%s: selector %s=%s does not match the pod labels" % (name, k, v))
        if o["kind"] in ("Deployment", "StatefulSet", "Pod"):
            check_pod(docs, o)
    for svc in objs(docs, "Service"):
        check_service(docs, svc)


def check_pod(docs, o):
    name = o["metadata"]["name"]
    spec = pod_spec(o)
    port_numbers, port_names = set(), set()
    volumes = {v["name"] for v in spec.get("volumes", []) or []}
    volumes |= {t["metadata"]["name"] for t in o["spec"].get("volumeClaimTemplates", []) or []}
    for c in containers(o, init=True):
        for m in c.get("volumeMounts", []) or []:
            check(m["name"] in volumes, "%s/%s mounts undefined volume %s" % (name, c["name"], m["name"]))
        for p in c.get("ports", []) or []:
            check(p["containerPort"] not in port_numbers, "%s: port %d used twice in the pod" % (name, p["containerPort"]))
            port_numbers.add(p["containerPort"])
            if "name" in p:
                check(len(p["name"]) <= 15 and PORT_NAME.match(p["name"]), "%s: bad port name %r" % (name, p["name"]))
                check(p["name"] not in port_names, "%s: port name %s used twice" % (name, p["name"]))
                port_names.add(p["name"])
    unmask = [c for c in containers(o, init=True) if is_unmask(c)]
    if not unmask:
        return
    cm = configmap(docs)
    drain = int(cm["UNMASK_DRAIN_TIMEOUT_SECONDS"])
    grace = spec.get("terminationGracePeriodSeconds")
    check(isinstance(grace, int) and grace > drain,
          "%s: terminationGracePeriodSeconds %r must exceed the drain timeout %d" % (name, grace, drain))
    for c in unmask:
        cmd = c.get("command") or []
        check(cmd and cmd[0] in BINARIES, "%s/%s runs %r, not one of the image's binaries" % (name, c["name"], cmd))
        expanded_args(docs, c)  # every $(VAR) must resolve
        if cmd[0] in ("unmask-loader", "unmask-executor", "unmask-scheduler"):
            check(flag1(docs, c, "drain-timeout-seconds") == str(drain), "%s/%s: drain flag differs" % (name, c["name"]))
            listen = flag1(docs, c, "listen")
            port = int(listen.rsplit(":", 1)[1])
            check(port in [p["containerPort"] for p in c.get("ports", [])],
                  "%s/%s: listen port %d is not declared" % (name, c["name"], port))
            metrics = int(flag1(docs, c, "metrics-listen").rsplit(":", 1)[1])
            check(metrics in [p["containerPort"] for p in c.get("ports", [])],
                  "%s/%s: metrics port %d is not declared" % (name, c["name"], metrics))
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                pr = c.get(probe)
                check(pr, "%s/%s has no %s" % (name, c["name"], probe))
                check(set(pr) & {"grpc", "httpGet", "tcpSocket", "exec"} == {"grpc"},
                      "%s/%s: %s is not gRPC-native: %s" % (name, c["name"], probe, pr))
                check(pr["grpc"]["port"] == port,
                      "%s/%s: %s probes port %s, the service listens on %d" % (name, c["name"], probe, pr["grpc"]["port"], port))
        sc = c.get("securityContext") or {}
        check(sc.get("allowPrivilegeEscalation") is False, "%s/%s allows privilege escalation" % (name, c["name"]))
    psc = spec.get("securityContext") or {}
    check(psc.get("runAsNonRoot") is True, "%s: pods must run as non-root" % name)


def check_service(docs, svc):
    name = svc["metadata"]["name"]
    sel = svc["spec"].get("selector") or {}
    check(sel, "service %s has no selector" % name)
    pods = [o for o in objs(docs) if o["kind"] in ("Deployment", "StatefulSet")
            and all(o["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items())]
    check(len(pods) == 1, "service %s selects %d workloads" % (name, len(pods)))
    names = {p.get("name") for c in containers(pods[0]) for p in c.get("ports", []) or []}
    numbers = {p["containerPort"] for c in containers(pods[0]) for p in c.get("ports", []) or []}
    for p in svc["spec"]["ports"]:
        tp = p.get("targetPort", p["port"])
        check(tp in names or tp in numbers, "service %s: targetPort %r is not a port of %s" % (name, tp, pods[0]["metadata"]["name"]))


# --------------------------------------------------------------------------------------------
# Component checks, reused by several cases


def check_worker(docs, replicas=1, executors=1, gpu="devicePlugin"):
    sts = one(docs, "StatefulSet", "worker")
    spec = pod_spec(sts)
    name = sts["metadata"]["name"]
    check(sts["spec"]["replicas"] == replicas, "worker replicas %s, want %d" % (sts["spec"]["replicas"], replicas))
    check(spec.get("shareProcessNamespace") is True, "worker pod must set shareProcessNamespace: true")
    check(not spec.get("hostIPC") and not spec.get("hostPID"), "worker pod must not use the host's IPC/PID namespaces")
    svc = one(docs, "Service", "worker")
    check(sts["spec"]["serviceName"] == svc["metadata"]["name"], "worker StatefulSet must be governed by the headless service")
    check(svc["spec"].get("clusterIP") == "None", "worker service must be headless (clusterIP: None)")
    vols = {v["name"]: v for v in spec["volumes"]}
    shm = [v for v in vols.values() if (v.get("emptyDir") or {}).get("medium") == "Memory"]
    check(len(shm) == 1 and shm[0]["emptyDir"].get("sizeLimit"), "worker needs one memory emptyDir with a sizeLimit for /dev/shm")
    names = [c["name"] for c in containers(sts)]
    want = ["loader"] + ["executor-%d" % i for i in range(executors)]
    check(names == want, "worker containers %s, want %s" % (names, want))
    loader = container(sts, "loader")
    loader_port = int(flag1(docs, loader, "listen").rsplit(":", 1)[1])
    device = "cpu" if gpu == "cpu" else "cuda:0"
    image = "unmask/unmask-cpu:" if gpu == "cpu" else "unmask/unmask-cuda:"
    exec_ports = []
    for c in containers(sts):
        check(c["image"].startswith(image), "%s/%s image %s, want %s*" % (name, c["name"], c["image"], image))
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        check(mounts.get("/dev/shm") == shm[0]["name"], "%s/%s must mount the memory emptyDir at /dev/shm" % (name, c["name"]))
        check(flag1(docs, c, "device") == device, "%s/%s --device=%s, want %s" % (name, c["name"], flag1(docs, c, "device"), device))
        env = {e["name"]: e.get("value") for e in c.get("env", []) or []}
        claims = [x["name"] for x in (c.get("resources") or {}).get("claims", [])]
        if gpu == "devicePlugin" and c["name"] == "loader":
            check(gpu_limit(c) == 1, "loader must have the nvidia.com/gpu: 1 limit, has %r" % gpu_limit(c))
        else:
            check(gpu_limit(c) is None, "%s/%s must not have a nvidia.com/gpu limit" % (name, c["name"]))
        if gpu == "devicePlugin" and c["name"] != "loader":
            check(env.get("NVIDIA_VISIBLE_DEVICES"), "%s: executors need NVIDIA_VISIBLE_DEVICES in devicePlugin mode" % c["name"])
        else:
            check("NVIDIA_VISIBLE_DEVICES" not in env, "%s/%s: NVIDIA_VISIBLE_DEVICES set outside devicePlugin mode" % (name, c["name"]))
        check(claims == (["gpu"] if gpu == "dra" else []), "%s/%s resource claims %s" % (name, c["name"], claims))
        if c["name"].startswith("executor-"):
            check(c["command"] == ["unmask-executor"], "%s runs %s" % (c["name"], c["command"]))
            check(flag1(docs, c, "loader") == "127.0.0.1:%d" % loader_port, "%s must reach the loader over localhost" % c["name"])
            check(flag1(docs, c, "model"), "%s has no --model" % c["name"])
            exec_ports.append(int(flag1(docs, c, "listen").rsplit(":", 1)[1]))
    check(loader["command"] == ["unmask-loader"], "loader runs %s" % loader["command"])
    check(flag1(docs, loader, "model-root") == "/models", "loader --model-root")
    check(flag(docs, loader, "preload"), "loader has no --preload")
    if gpu == "dra":
        check([r["name"] for r in spec.get("resourceClaims", [])] == ["gpu"], "worker pod must declare the gpu resource claim")
        rct = one(docs, "ResourceClaimTemplate", "worker")
        check(spec["resourceClaims"][0]["resourceClaimTemplateName"] == rct["metadata"]["name"], "claim template name")
    else:
        check(not spec.get("resourceClaims"), "resourceClaims outside dra mode")
        none_of(docs, "ResourceClaimTemplate")
    # Executor discovery: the headless service carries every executor port, the scheduler asks DNS for them.
    svc_ports = {p["port"] for p in svc["spec"]["ports"]}
    for p in exec_ports:
        check(p in svc_ports, "headless service lacks executor port %d" % p)
    sched = container(one(docs, "Deployment", "scheduler"), "scheduler")
    dns = flag1(docs, sched, "executors-dns").split(",")
    want_dns = ["%s.%s.svc:%d" % (svc["metadata"]["name"], NAMESPACE, p) for p in exec_ports]
    check(dns == want_dns, "scheduler --executors-dns=%s, want %s" % (dns, want_dns))
    return sts


def check_scheduler(docs, replicas=1):
    dep = one(docs, "Deployment", "scheduler")
    check(dep["spec"]["replicas"] == replicas, "scheduler replicas %s, want %d" % (dep["spec"]["replicas"], replicas))
    c = container(dep, "scheduler")
    check(c["command"] == ["unmask-scheduler"], "scheduler command %s" % c["command"])
    check(c["image"].startswith("unmask/unmask-cpu:"), "scheduler uses the CPU image")
    check(flag1(docs, c, "listen") == "0.0.0.0:50051", "scheduler listens on 50051")
    check(flag1(docs, c, "metrics-listen") == "0.0.0.0:9091", "scheduler metrics on 9091")
    check(flag1(docs, c, "dispatch-policy") in ("least_busy", "round_robin", "random"), "dispatch policy")
    svc = one(docs, "Service", "scheduler")
    check(any(p["port"] == 50051 and p["targetPort"] == "grpc" for p in svc["spec"]["ports"]), "scheduler service port")
    return dep, c


def check_api_keys_mounted(docs, secret_name, key):
    dep = one(docs, "Deployment", "scheduler")
    c = container(dep, "scheduler")
    check(flag1(docs, c, "api-keys-file") == "/etc/unmask/api-keys", "scheduler --api-keys-file")
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    vol = [v for v in pod_spec(dep)["volumes"] if v["name"] == mounts.get("/etc/unmask")]
    check(vol and vol[0]["secret"]["secretName"] == secret_name, "API keys volume must come from Secret %s" % secret_name)
    check(vol[0]["secret"]["items"] == [{"key": key, "path": "api-keys"}], "API keys item %s" % vol[0]["secret"]["items"])


def check_redis_bundled(docs):
    sts = one(docs, "StatefulSet", "redis")
    c = container(sts, "redis")
    argv = c.get("command", []) + c.get("args", [])
    check("--appendonly" in argv and argv[argv.index("--appendonly") + 1] == "yes", "redis must run with --appendonly yes: %s" % argv)
    check(argv[argv.index("--dir") + 1] == "/data", "redis --dir /data")
    vct = sts["spec"].get("volumeClaimTemplates") or []
    check(len(vct) == 1 and vct[0]["spec"]["resources"]["requests"]["storage"], "redis needs a PVC from volumeClaimTemplates")
    check({"name": vct[0]["metadata"]["name"], "mountPath": "/data"} in c["volumeMounts"], "redis must mount its claim at /data")
    svc = one(docs, "Service", "redis")
    sched = container(one(docs, "Deployment", "scheduler"), "scheduler")
    check(flag1(docs, sched, "redis") == "%s:6379" % svc["metadata"]["name"], "scheduler --redis must point at the bundled Redis")


def check_jaeger(docs):
    dep = one(docs, "Deployment", "jaeger")
    c = container(dep, "jaeger")
    env = {e["name"]: e.get("value") for e in c["env"]}
    check(env.get("COLLECTOR_OTLP_ENABLED") == "true", "jaeger needs COLLECTOR_OTLP_ENABLED=true")
    svc = one(docs, "Service", "jaeger")
    ports = {p["port"] for p in svc["spec"]["ports"]}
    check({4317, 16686} <= ports, "jaeger service ports %s" % ports)
    return svc


def otlp_endpoints(docs):
    eps = set()
    for o in objs(docs):
        if o["kind"] in ("Deployment", "StatefulSet"):
            for c in containers(o):
                if is_unmask(c):
                    eps.add(flag1(docs, c, "otlp-endpoint"))
    return eps


def check_test_hook(docs, model):
    pods = objs(docs, "Pod")
    check(len(pods) == 1, "expected the helm test pod")
    pod = pods[0]
    check(pod["metadata"]["annotations"].get("helm.sh/hook") == "test", "test pod needs helm.sh/hook: test")
    check(docs[-1]["object"] is pod, "hooks come after the release's manifests")
    check(pod["spec"]["restartPolicy"] == "Never", "test pod restartPolicy Never")
    c = container(pod, "generate")
    check(c["command"] == ["unmask"], "test pod runs the CLI")
    args = c["args"]
    svc = one(docs, "Service", "scheduler")
    check("--scheduler=%s:50051" % svc["metadata"]["name"] in args, "test pod must target the scheduler service: %s" % args)
    i = args.index("generate")
    check("--model=%s" % model in args[i:], "test pod generates with --model=%s: %s" % (model, args))
    check(any(a.startswith("--gen-length=") for a in args[i:]) and "--json" in args[i:], "test pod CLI args %s" % args)
    health = container(pod, "health")
    check(health["command"] == ["unmask"] and health["args"][0] == "health", "test pod checks gRPC health first")


# --------------------------------------------------------------------------------------------
# Cases

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def default():
    docs, notes = render()
    kinds = sorted({o["kind"] for o in objs(docs)})
    check(kinds == sorted(["ConfigMap", "Deployment", "PersistentVolumeClaim", "Pod", "Secret", "Service",
                           "ServiceAccount", "StatefulSet"]), "kinds %s" % kinds)
    check_scheduler(docs)
    check_worker(docs)
    check_redis_bundled(docs)
    jaeger = check_jaeger(docs)
    check(otlp_endpoints(docs) == {"%s:4317" % jaeger["metadata"]["name"]}, "services must export to Jaeger: %s" % otlp_endpoints(docs))
    secret = one(docs, "Secret", "scheduler")
    key = base64.b64decode(secret["data"]["api-keys"]).decode()
    check(len(key.strip()) >= 32 and "\n" not in key.strip(), "a random API key is generated")
    check_api_keys_mounted(docs, secret["metadata"]["name"], "api-keys")
    pvc = one(docs, "PersistentVolumeClaim", "models")
    vol = [v for v in pod_spec(one(docs, "StatefulSet", "worker"))["volumes"] if v["name"] == "models"][0]
    check(vol["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"], "worker mounts the models claim")
    check(vol["persistentVolumeClaim"]["readOnly"] is True, "models are mounted read-only")
    check_test_hook(docs, "LLaDA-8B-Instruct")
    sts = one(docs, "StatefulSet", "worker")
    check(pod_spec(sts)["terminationGracePeriodSeconds"] == 45, "default grace period 45")
    check(pod_spec(sts)["tolerations"][0]["key"] == "nvidia.com/gpu", "worker tolerates GPU taints")
    ann = sts["spec"]["template"]["metadata"]["annotations"]
    check(re.match(r"^[0-9a-f]{64}$", ann.get("checksum/config", "")), "worker pods roll on config changes")
    for text in ("helm test %s" % RELEASE, "port-forward", "16686", "LLaDA-8B-Instruct"):
        check(text in notes, "NOTES should mention %r:\n%s" % (text, notes))
    # The YAML output is the same stream: one "# Source:" header per manifest.
    p = run_renderer([])
    check(p.returncode == 0 and p.stdout.count("---\n# Source: unmask/templates/") == len(docs),
          "the YAML stream needs one '---' + '# Source:' header per manifest")
    check("_helpers.tpl" not in p.stdout and "NOTES" not in p.stdout, "partials and NOTES stay out of the manifests")


@case
def external_redis():
    docs, notes = render("--set", "redis.mode=external", "--set", "redis.external.address=redis.prod:6380")
    none_of(docs, "StatefulSet", "redis")
    none_of(docs, "Service", "redis")
    sched = container(one(docs, "Deployment", "scheduler"), "scheduler")
    check(flag1(docs, sched, "redis") == "redis.prod:6380", "scheduler --redis must be the external address")
    check("external Redis at redis.prod:6380" in notes, "NOTES names the external Redis")
    check_worker(docs)


@case
def in_process_queue():
    docs, notes = render("--set", "redis.mode=none")
    none_of(docs, "StatefulSet", "redis")
    sched = container(one(docs, "Deployment", "scheduler"), "scheduler")
    check(flag1(docs, sched, "redis") == "", "--redis= must be empty for the in-process queue")
    check("LOST" in notes, "NOTES must warn that the in-process queue loses jobs")


@case
def no_jaeger():
    docs, notes = render("--set", "jaeger.enabled=false")
    none_of(docs, "Deployment", "jaeger")
    none_of(docs, "Service", "jaeger")
    check(otlp_endpoints(docs) == {""}, "without Jaeger tracing is off: %s" % otlp_endpoints(docs))
    check("Tracing is off" in notes, "NOTES says tracing is off")
    docs, _ = render("--set", "jaeger.enabled=false", "--set", "tracing.otlpEndpoint=otel-collector.obs:4317")
    check(otlp_endpoints(docs) == {"otel-collector.obs:4317"}, "an explicit collector is used")
    docs, _ = render("--set", "tracing.enabled=false")
    check(otlp_endpoints(docs) == {""}, "tracing.enabled=false turns export off")
    check_jaeger(docs)


@case
def two_gpus():
    docs, _ = render("--set", "worker.replicas=2")
    sts = check_worker(docs, replicas=2)
    total = sum(gpu_limit(c) or 0 for c in containers(sts))
    check(total == 1, "each worker pod holds exactly one GPU, found %d" % total)


@case
def cpu_only():
    docs, notes = render("--set", "worker.gpu.enabled=false")
    check_worker(docs, gpu="cpu")
    blob = json.dumps(docs)
    check("nvidia.com/gpu\":" not in blob.replace("\"key\": \"nvidia.com/gpu\"", ""), "CPU mode must not request GPUs")
    check("CPU only" in notes, "NOTES says CPU only")


@case
def executors_per_gpu():
    docs, _ = render("--set", "worker.executorsPerGpu=3", "--set", "worker.replicas=2")
    sts = check_worker(docs, replicas=2, executors=3)
    for i in range(3):
        c = container(sts, "executor-%d" % i)
        check(flag1(docs, c, "listen") == "0.0.0.0:%d" % (50053 + i), "executor-%d port" % i)
        check(flag1(docs, c, "metrics-listen") == "0.0.0.0:%d" % (9093 + i), "executor-%d metrics port" % i)


@case
def dra():
    docs, _ = render("--set", "worker.gpu.mode=dra")
    check_worker(docs, gpu="dra")
    rct = one(docs, "ResourceClaimTemplate", "worker")
    req = rct["spec"]["spec"]["devices"]["requests"][0]
    check(req["deviceClassName"] == "gpu.nvidia.com", "v1beta1 device request %s" % req)
    docs, _ = render("--set", "worker.gpu.mode=dra", "--set", "worker.gpu.dra.apiVersion=resource.k8s.io/v1")
    req = one(docs, "ResourceClaimTemplate", "worker")["spec"]["spec"]["devices"]["requests"][0]
    check(req["exactly"]["deviceClassName"] == "gpu.nvidia.com", "v1 device request %s" % req)


@case
def service_monitor():
    docs, _ = render()
    none_of(docs, "ServiceMonitor")
    docs, _ = render("--set", "metrics.serviceMonitor.enabled=true", "--set", "worker.executorsPerGpu=2",
                     "--set", "metrics.serviceMonitor.labels.release=prom")
    sm = objs(docs, "ServiceMonitor")
    check(len(sm) == 1 and sm[0]["apiVersion"] == "monitoring.coreos.com/v1", "ServiceMonitor monitoring.coreos.com/v1")
    check(sm[0]["metadata"]["labels"].get("release") == "prom", "ServiceMonitor extra labels")
    svc_ports = {p["name"] for s in objs(docs, "Service") for p in s["spec"]["ports"]}
    for ep in sm[0]["spec"]["endpoints"]:
        check(ep["port"] in svc_ports, "ServiceMonitor scrapes port %s, which no Service has" % ep["port"])
    want = {"metrics", "loader-metrics", "exec-metrics-0", "exec-metrics-1"}
    check({ep["port"] for ep in sm[0]["spec"]["endpoints"]} == want, "ServiceMonitor endpoints")


@case
def models_sources():
    docs, _ = render("--set", "models.source=hostPath", "--set", "models.hostPath.path=/srv/models")
    none_of(docs, "PersistentVolumeClaim")
    vol = [v for v in pod_spec(one(docs, "StatefulSet", "worker"))["volumes"] if v["name"] == "models"][0]
    check(vol.get("hostPath", {}).get("path") == "/srv/models", "hostPath models volume: %s" % vol)
    docs, _ = render("--set", "models.source=existingClaim", "--set", "models.existingClaim=llm-weights")
    none_of(docs, "PersistentVolumeClaim")
    vol = [v for v in pod_spec(one(docs, "StatefulSet", "worker"))["volumes"] if v["name"] == "models"][0]
    check(vol["persistentVolumeClaim"]["claimName"] == "llm-weights", "existingClaim models volume: %s" % vol)
    docs, _ = render("--set", "models.mountPath=/weights")
    loader = container(one(docs, "StatefulSet", "worker"), "loader")
    check(flag1(docs, loader, "model-root") == "/weights", "--model-root follows models.mountPath")


@case
def api_keys():
    docs, _ = render("--set", "scheduler.apiKeys.keys={key-aaaaaaaa,key-bbbbbbbb}")
    secret = one(docs, "Secret", "scheduler")
    check(base64.b64decode(secret["data"]["api-keys"]).decode() == "key-aaaaaaaa\nkey-bbbbbbbb\n", "keys one per line")
    docs, _ = render("--set", "scheduler.apiKeys.existingSecret=my-keys", "--set", "scheduler.apiKeys.secretKey=keys.txt")
    none_of(docs, "Secret")
    check_api_keys_mounted(docs, "my-keys", "keys.txt")
    test_pod = objs(docs, "Pod")[0]
    check(pod_spec(test_pod)["volumes"][0]["secret"]["secretName"] == "my-keys", "the test pod uses the same keys")
    docs, notes = render("--set", "scheduler.apiKeys.enabled=false")
    none_of(docs, "Secret")
    sched = container(one(docs, "Deployment", "scheduler"), "scheduler")
    check(not flag(docs, sched, "api-keys-file"), "no --api-keys-file when keys are disabled")
    check("api-key" not in " ".join(container(objs(docs, "Pod")[0], "generate")["args"]), "test pod without a key")


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
    schema_path = os.path.join(ARGS.chart, "values.schema.json")
    with open(schema_path) as f:
        sch = json.load(f)
    check(sch.get("$schema") == "http://json-schema.org/draft-07/schema#", "schema must be draft-07")
    p = run_renderer(["--validate-only"])
    check(p.returncode == 0, "default values must validate: %s" % p.stderr)
    p = subprocess.run([ARGS.helmrender, "--yaml2json", os.path.join(ARGS.chart, "values.yaml")],
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
    lines = open(os.path.join(ARGS.chart, "values.yaml")).read().splitlines()
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
    text = open(os.path.join(ARGS.chart, "README.md")).read()
    rows = re.findall(r"^\| `([A-Za-z0-9_.]+)` \| `(.*?)` \|", text, re.M)
    check(rows, "README.md has no values table")
    with open(os.path.join(ARGS.chart, "values.schema.json")) as f:
        sch = json.load(f)
    p = subprocess.run([ARGS.helmrender, "--yaml2json", os.path.join(ARGS.chart, "values.yaml")],
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
    examples = re.findall(r"^helm install (?:.|\n)*?(?<!\\)$", text, re.M)
    check(len(examples) >= 4, "README.md install examples not found")
    for ex in examples:
        argv = shlex.split(ex.replace("\\\n", " "))
        args = argv[4:]  # after: helm install NAME CHART
        args = [a for a in args if a not in ("--create-namespace",)]
        if "-n" in args:
            i = args.index("-n")
            del args[i:i + 2]
        render(*args)
    print("%d values in the README table, %d install examples render" % (len(table), len(examples)))


@case
def fail_external_redis_without_address():
    render_fails(["--set", "redis.mode=external"],
                 "redis.external.address is required when redis.mode=external")


@case
def fail_grace_period_too_short():
    render_fails(["--set", "terminationGracePeriodSeconds=30"],
                 "terminationGracePeriodSeconds (30) must be greater than drainTimeoutSeconds (30)")
    render_fails(["--set", "drainTimeoutSeconds=120"],
                 "terminationGracePeriodSeconds (45) must be greater than drainTimeoutSeconds (120)")


@case
def fail_bad_types():
    render_fails(["--set", "worker.replicas=two"], "- worker.replicas: Invalid type. Expected: integer, given: string")
    render_fails(["--set", "worker.gpu.enabled=yes"], "- worker.gpu.enabled: Invalid type. Expected: boolean, given: string")
    render_fails(["--set", "tracing.sampleRatio=0.5"], "- tracing.sampleRatio: Invalid type. Expected: number, given: string")
    render_fails(["--set-json", "tracing.sampleRatio=1.5"], "- tracing.sampleRatio: Must be less than or equal to 1")
    render_fails(["--set", "worker.loader.preload=LLaDA"], "- worker.loader.preload: Invalid type. Expected: array, given: string")


@case
def fail_bad_enums():
    render_fails(["--set", "scheduler.dispatchPolicy=fastest"], "- scheduler.dispatchPolicy: scheduler.dispatchPolicy must be one of")
    render_fails(["--set", "worker.loader.defaultPrecision=fp8"], "- worker.loader.defaultPrecision:")
    render_fails(["--set", "redis.mode=sentinel"], "- redis.mode:")
    render_fails(["--set", "worker.loader.preload={model:fp8}"], "- worker.loader.preload.0: Does not match pattern")


@case
def fail_unknown_key():
    render_fails(["--set", "worker.replica=2"], "- worker: Additional property replica is not allowed")


@case
def fail_no_model():
    render_fails(["--set", "worker.loader.preload=null"],
                 "worker.executor.model is required when worker.loader.preload is empty")


@case
def fail_models_source_without_location():
    render_fails(["--set", "models.source=hostPath"], "models.hostPath.path is required when models.source=hostPath")
    render_fails(["--set", "models.source=existingClaim"], "models.existingClaim is required when models.source=existingClaim")


@case
def fail_scheduler_replicas_without_redis():
    render_fails(["--set", "redis.mode=none", "--set", "scheduler.replicas=2"],
                 "scheduler.replicas=2 needs a shared queue")


@case
def fail_port_collision():
    render_fails(["--set", "worker.executor.port=50052"], "worker ports collide")
    render_fails(["--set", "worker.executorsPerGpu=2", "--set", "worker.executor.metricsPort=9091",
                  "--set", "worker.loader.metricsPort=9092"], "worker ports collide")


@case
def selftest():
    """The checks above must catch broken manifests (a check that cannot fail proves nothing)."""
    docs, _ = render()

    def broken(mutate, why):
        d = copy.deepcopy(docs)
        mutate(d)
        try:
            check_common(d)
            check_worker(d)
            check_redis_bundled(d)
            check_test_hook(d, "LLaDA-8B-Instruct")
        except CheckError as e:
            print("caught %s: %s" % (why, e))
            return
        raise CheckError("a broken manifest passed the checks: " + why)

    def worker_spec(d):
        return pod_spec(one(d, "StatefulSet", "worker"))

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


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--helmrender")
    ap.add_argument("--chart")
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--list", action="store_true", help="print the case names, one per line")
    ARGS = ap.parse_args()
    if ARGS.list:
        print("\n".join(CASES))
        return 0
    if not ARGS.helmrender or not ARGS.chart:
        ap.error("--helmrender and --chart are required")
    if not os.access(ARGS.helmrender, os.X_OK):
        print("helmrender not found at %s (build the helmrender target)" % ARGS.helmrender, file=sys.stderr)
        return 1
    names = ARGS.case or list(CASES)
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
