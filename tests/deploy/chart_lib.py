#!/usr/bin/env python3
"""Helpers of check_chart.py: rendering the chart and the checks every case shares."""

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


def readme_install_args(text):
    """The renderer flags of every `helm install NAME CHART ...` example of a README."""
    out = []
    for ex in re.findall(r"^helm install (?:.|\n)*?(?<!\\)$", text, re.M):
        args = shlex.split(ex.replace("\\\n", " "))[4:]  # after: helm install NAME CHART
        args = [a for a in args if a not in ("--create-namespace",)]
        if "-n" in args:
            i = args.index("-n")
            del args[i:i + 2]
        out.append(args)
    return out


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
            cm_name = one(docs, "ConfigMap", None)["metadata"]["name"]
            check({"configMapRef": {"name": cm_name}} in (c.get("envFrom") or []),
                  "%s/%s must read its settings from the ConfigMap %s (envFrom)" % (name, c["name"], cm_name))
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
                if flag(docs, c, "tls-cert"):
                    # Kubernetes' gRPC probes cannot speak TLS: the CLI's health check over TLS.
                    check(set(pr) & {"grpc", "httpGet", "tcpSocket", "exec"} == {"exec"},
                          "%s/%s: %s of a TLS service must be an exec probe: %s" % (name, c["name"], probe, pr))
                    cmd = pr["exec"]["command"]
                    check(cmd[0] == "unmask" and "health" in cmd and "--addr=127.0.0.1:%d" % port in cmd
                          and any(a.startswith("--tls-ca=") for a in cmd),
                          "%s/%s: %s must run `unmask --tls-ca=... health --addr=127.0.0.1:%d`: %s"
                          % (name, c["name"], probe, port, cmd))
                    continue
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
        if c["name"] != "loader":  # the loader has no --device: its weights live in /dev/shm
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
    check("--keep-segments-on-exit" in loader.get("args", []),
          "loader must keep its segments on exit, so that a restarted loader container adopts them")
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


def check_scheduler(docs, replicas=1, models="/models", http=(8000, 8000)):
    """The scheduler with its models mount (check_models_mounts) and HTTP API (check_scheduler_http)."""
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
    check_models_mounts(docs, models)
    check_scheduler_http(docs, *(http or (None, None)))
    return dep, c


def models_volume(o):
    vols = [v for v in pod_spec(o).get("volumes", []) or [] if v["name"] == "models"]
    check(len(vols) == 1, "%s: expected one models volume, found %s" % (o["metadata"]["name"], vols))
    return vols[0]


def check_models_mounts(docs, mount_path="/models"):
    """The scheduler encodes text and chat prompts with the tokenizers of the models volume: it gets
    --model-root=mount_path and mounts there, read-only, the very volume the worker pods mount
    (one source: the chart's claim, an existing claim or a hostPath). Returns that volume."""
    dep, sts = one(docs, "Deployment", "scheduler"), one(docs, "StatefulSet", "worker")
    sched = container(dep, "scheduler")
    check(flag1(docs, sched, "model-root") == mount_path,
          "scheduler --model-root=%s, want %s (text prompts need the tokenizers)" % (flag1(docs, sched, "model-root"), mount_path))
    for o, c in [(dep, sched)] + [(sts, c) for c in containers(sts)]:
        mounts = [m for m in c.get("volumeMounts", []) or [] if m["name"] == "models"]
        check(mounts == [{"name": "models", "mountPath": mount_path, "readOnly": True}],
              "%s/%s must mount the models volume read-only at %s: %s" % (o["metadata"]["name"], c["name"], mount_path, mounts))
    vol, worker_vol = models_volume(dep), models_volume(sts)
    check(vol == worker_vol, "the scheduler's models volume %s differs from the worker's %s" % (vol, worker_vol))
    sources = sorted(set(vol) - {"name"})
    check(sources in (["persistentVolumeClaim"], ["hostPath"]), "models volume source %s" % sources)
    if "persistentVolumeClaim" in vol:
        check(vol["persistentVolumeClaim"].get("readOnly") is True, "the models claim must be mounted read-only: %s" % vol)
    return vol


def check_scheduler_http(docs, port=8000, service_port=8000, tls=False):
    """The OpenAI-compatible HTTP API: --http-port, a container port and a Service port named http;
    port None: none of them (scheduler.http.enabled=false)."""
    c = container(one(docs, "Deployment", "scheduler"), "scheduler")
    svc = one(docs, "Service", "scheduler")
    cports = {p["name"]: p for p in c.get("ports", [])}
    sports = {p["name"]: p for p in svc["spec"]["ports"]}
    if port is None:
        check(not flag(docs, c, "http-port"), "--http-port without scheduler.http.enabled: %s" % flag(docs, c, "http-port"))
        check("http" not in cports, "scheduler container port http without scheduler.http.enabled")
        check("http" not in sports, "scheduler Service port http without scheduler.http.enabled")
        return
    check(flag1(docs, c, "http-port") == str(port), "scheduler --http-port=%s, want %d" % (flag1(docs, c, "http-port"), port))
    check(not flag(docs, c, "http-host"), "the HTTP API binds the default 0.0.0.0: %s" % flag(docs, c, "http-host"))
    check(cports.get("http") == {"name": "http", "containerPort": port, "protocol": "TCP"},
          "scheduler container port http %s, want %d" % (cports.get("http"), port))
    want = {"name": "http", "port": service_port, "targetPort": "http", "protocol": "TCP", "appProtocol": "https" if tls else "http"}
    check(sports.get("http") == want, "scheduler Service port http %s, want %s" % (sports.get("http"), want))


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
    check(c["image"].startswith("jaegertracing/all-in-one:"), "jaeger runs the all-in-one image, not %s" % c["image"])
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

