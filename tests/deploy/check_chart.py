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
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart_lib  # noqa: E402
from chart_lib import *  # noqa: E402,F401,F403

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
    key = base64.b64decode(secret["data"]["api-key"]).decode().strip()
    check(len(key) >= 32 and "\n" not in key, "a random API key is generated")
    key_file = base64.b64decode(secret["data"]["api-keys"]).decode()
    check(key_file == "sha256:%s generated-at-install\n" % hashlib.sha256(key.encode()).hexdigest(),
          "the key file holds the generated key's SHA-256, not the key: %r" % key_file)
    check_api_keys_mounted(docs, secret["metadata"]["name"], "api-keys")
    test_pod = objs(docs, "Pod")[0]
    check(pod_spec(test_pod)["volumes"][0]["secret"]["items"] == [{"key": "api-key", "path": "api-key"}],
          "the test pod reads the key in the clear")
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
def placement_and_resources():
    """Resources, nodeSelector and tolerations of the scheduler and the worker pods come from values;
    the loader keeps its GPU limit next to the resources set for it."""
    docs, _ = render("--set", "scheduler.resources.limits.memory=1Gi", "--set-string", "scheduler.nodeSelector.pool=cpu",
                     "--set", "worker.loader.resources.limits.memory=40Gi", "--set", "worker.executor.resources.requests.cpu=4",
                     "--set-string", "worker.nodeSelector.nvidia\\.com/gpu\\.present=true",
                     "--set-json", 'worker.tolerations=[{"key":"dedicated","operator":"Equal","value":"llm","effect":"NoSchedule"}]')
    dep = one(docs, "Deployment", "scheduler")
    res = container(dep, "scheduler")["resources"]
    check(res == {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}, "scheduler resources %s" % res)
    check(pod_spec(dep).get("nodeSelector") == {"pool": "cpu"}, "scheduler nodeSelector %s" % pod_spec(dep).get("nodeSelector"))
    sts = check_worker(docs)
    spec = pod_spec(sts)
    check(spec.get("nodeSelector") == {"nvidia.com/gpu.present": "true"}, "worker nodeSelector %s" % spec.get("nodeSelector"))
    check(spec.get("tolerations") == [{"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"}],
          "worker tolerations %s" % spec.get("tolerations"))
    loader = container(sts, "loader")["resources"]
    check(loader["limits"] == {"memory": "40Gi", "nvidia.com/gpu": 1}, "loader limits %s" % loader["limits"])
    check(container(sts, "executor-0")["resources"] == {"requests": {"cpu": 4}}, "executor resources")
    docs, _ = render()
    check(not pod_spec(one(docs, "StatefulSet", "worker")).get("nodeSelector"), "no worker nodeSelector by default")


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
    a, b = "sha256:%s alice max_queued_jobs=4" % ("a" * 64), "sha256:%s" % ("b" * 64)
    docs, _ = render("--set", "scheduler.apiKeys.entries={%s,%s}" % (a, b))
    secret = one(docs, "Secret", "scheduler")
    check(base64.b64decode(secret["data"]["api-keys"]).decode() == a + "\n" + b + "\n", "key file lines one per line")
    check("api-key" not in secret["data"], "no key in the clear when the entries are given")
    # A key in the clear where a hash belongs is refused by the schema.
    render_fails(["--set", "scheduler.apiKeys.entries={my-plain-key}"], "entries")
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


TLS_FILES = {"tls-cert": "/etc/unmask-tls/tls.crt", "tls-key": "/etc/unmask-tls/tls.key", "tls-ca": "/etc/unmask-tls/ca.crt"}


def check_tls_mount(docs, o, c, secret):
    vols = {v["name"]: v for v in pod_spec(o)["volumes"]}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    m = mounts.get("/etc/unmask-tls")
    check(m and m.get("readOnly") is True, "%s must mount the TLS Secret read-only: %s" % (c["name"], mounts))
    check(vols[m["name"]]["secret"]["secretName"] == secret, "%s mounts %s, want the Secret %s" % (c["name"], vols[m["name"]], secret))
    check(sorted(i["path"] for i in vols[m["name"]]["secret"]["items"]) == ["ca.crt", "tls.crt", "tls.key"], "TLS items")


@case
def tls():
    # Plaintext by default: no TLS flag anywhere, gRPC-native probes.
    docs, _ = render()
    for o in objs(docs):
        if o["kind"] in ("Deployment", "StatefulSet", "Pod"):
            for c in containers(o, init=True):
                check(not any("tls" in a for a in c.get("args", []) or []), "%s has TLS flags by default" % c["name"])
    docs, _ = render("--set", "tls.enabled=true", "--set", "tls.secretName=my-tls")
    name = "%s-unmask" % RELEASE
    sched = container(one(docs, "Deployment", "scheduler"), "scheduler")
    sts = one(docs, "StatefulSet", "worker")
    servers = [(one(docs, "Deployment", "scheduler"), sched)] + [(sts, c) for c in containers(sts)]
    for o, c in servers:
        for f, path in TLS_FILES.items():
            check(flag1(docs, c, f) == path, "%s --%s=%s, want %s" % (c["name"], f, flag1(docs, c, f), path))
        check("--tls-require-client-cert" in c["args"], "%s: mutual TLS by default" % c["name"])
        check(flag1(docs, c, "tls-refresh-seconds") == "60", "%s re-reads its TLS files every 60 s" % c["name"])
        check_tls_mount(docs, o, c, "my-tls")
        check("exec" in c["livenessProbe"] and "--tls-server-name=%s" % name in c["livenessProbe"]["exec"]["command"],
              "%s probes over TLS with the server name: %s" % (c["name"], c["livenessProbe"]))
    for peer, c in [("executor", sched)] + [("loader", c) for c in containers(sts) if c["name"].startswith("executor-")]:
        for f, path in TLS_FILES.items():
            f = f.replace("tls-", peer + "-tls-")
            check(flag1(docs, c, f) == path, "%s --%s=%s, want %s" % (c["name"], f, flag1(docs, c, f), path))
        check(flag1(docs, c, peer + "-tls-server-name") == name, "%s checks the %s for %s" % (c["name"], peer, name))
        check(flag1(docs, c, peer + "-tls-refresh-seconds") == "60", "%s re-reads its %s TLS files" % (c["name"], peer))
    test_pod = objs(docs, "Pod")[0]
    for c in containers(test_pod, init=True):
        check("--tls-ca=/etc/unmask-tls/ca.crt" in c["args"] and "--tls-server-name=%s" % name in c["args"],
              "helm test's %s must use TLS: %s" % (c["name"], c["args"]))
        check(c["args"].index("--tls-ca=/etc/unmask-tls/ca.crt") < c["args"].index("health" if c["name"] == "health" else "generate"),
              "the CLI's TLS flags go before the subcommand")
        check_tls_mount(docs, test_pod, c, "my-tls")
    # TLS without client certificates, and a name of one's own.
    docs, _ = render("--set", "tls.enabled=true", "--set", "tls.secretName=my-tls", "--set", "tls.requireClientCert=false",
                     "--set", "tls.serverName=unmask.internal", "--set", "worker.executorsPerGpu=2",
                     "--set", "tls.refreshSeconds=0")
    sts = one(docs, "StatefulSet", "worker")
    for c in containers(sts):
        check("--tls-require-client-cert" not in c["args"], "%s: no mutual TLS when requireClientCert=false" % c["name"])
        check(not any("tls-refresh-seconds" in a for a in c["args"]), "%s: refreshSeconds=0 reads once" % c["name"])
    check(flag1(docs, container(sts, "executor-1"), "loader-tls-server-name") == "unmask.internal", "tls.serverName")
    render_fails(["--set", "tls.enabled=true"], "tls.secretName is required when tls.enabled")


OTLP_TLS_FILES = {"otlp-tls-ca": "/etc/unmask-otlp-tls/ca.crt", "otlp-tls-cert": "/etc/unmask-otlp-tls/tls.crt",
                  "otlp-tls-key": "/etc/unmask-otlp-tls/tls.key"}
OTLP = ["--set", "jaeger.enabled=false", "--set", "tracing.otlpEndpoint=otel.obs:4317"]


def services(docs):
    """(workload, container) of the scheduler, the loader and every executor."""
    sts = one(docs, "StatefulSet", "worker")
    dep = one(docs, "Deployment", "scheduler")
    return [(dep, container(dep, "scheduler"))] + [(sts, c) for c in containers(sts)]


def check_no_otlp_tls(docs, why):
    for o in objs(docs):
        if o["kind"] in ("Deployment", "StatefulSet", "Pod"):
            check(not any(v["name"] == "otlp-tls" for v in pod_spec(o).get("volumes", []) or []),
                  "%s has the otlp-tls volume %s" % (o["metadata"]["name"], why))
            for c in containers(o, init=True):
                check(not any(a.startswith("--otlp-tls") for a in c.get("args", []) or []),
                      "%s has --otlp-tls flags %s" % (c["name"], why))


def check_otlp_tls_mount(o, c, secret, items):
    vols = {v["name"]: v for v in pod_spec(o)["volumes"]}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    m = mounts.get("/etc/unmask-otlp-tls")
    check(m and m.get("readOnly") is True, "%s must mount the tracing TLS Secret read-only: %s" % (c["name"], mounts))
    check(vols[m["name"]]["secret"]["secretName"] == secret, "%s mounts %s, want the Secret %s" % (c["name"], vols[m["name"]], secret))
    got = sorted(i["path"] for i in vols[m["name"]]["secret"]["items"])
    check(got == items, "tracing TLS items %s, want %s" % (got, items))


@case
def tracing_tls():
    # Off by default, and without an endpoint (tracing off) even when asked for.
    check_no_otlp_tls(render()[0], "by default")
    check_no_otlp_tls(render("--set", "tracing.enabled=false", "--set", "tracing.tls.enabled=true",
                             "--set", "tracing.tls.secretName=otel-client")[0], "with tracing off")
    # A collector of one's own over mutual TLS, next to the services' own TLS.
    docs, _ = render(*OTLP, "--set", "tracing.tls.enabled=true", "--set", "tracing.tls.secretName=otel-client",
                     "--set", "tracing.tls.clientCertificate=true", "--set", "tracing.tls.serverName=otel.obs",
                     "--set", "worker.executorsPerGpu=2", "--set", "tls.enabled=true", "--set", "tls.secretName=my-tls")
    svcs = services(docs)
    check(len(svcs) == 4, "scheduler, loader and two executors: %s" % [c["name"] for _, c in svcs])
    for o, c in svcs:
        for f, path in OTLP_TLS_FILES.items():
            check(flag1(docs, c, f) == path, "%s --%s=%s, want %s" % (c["name"], f, flag1(docs, c, f), path))
        check(flag1(docs, c, "otlp-tls-server-name") == "otel.obs", "%s --otlp-tls-server-name" % c["name"])
        check(flag1(docs, c, "otlp-tls-refresh-seconds") == "60", "%s re-reads its OTLP TLS files every 60 s" % c["name"])
        i = c["args"].index("--otlp-endpoint=$(UNMASK_OTLP_ENDPOINT)")
        check(c["args"][i + 1].startswith("--otlp-tls-"), "%s: the OTLP TLS flags follow --otlp-endpoint: %s" % (c["name"], c["args"]))
        check_otlp_tls_mount(o, c, "otel-client", ["ca.crt", "tls.crt", "tls.key"])
        check_tls_mount(docs, o, c, "my-tls")
    test_pod = objs(docs, "Pod")[0]
    check(not any(v["name"] == "otlp-tls" for v in pod_spec(test_pod)["volumes"]), "helm test exports no spans")
    # Only the CA, read once, the endpoint's host as the name.
    docs, _ = render(*OTLP, "--set", "tracing.tls.enabled=true", "--set", "tracing.tls.secretName=otel-ca",
                     "--set", "tracing.tls.refreshSeconds=0")
    for o, c in services(docs):
        check(flag1(docs, c, "otlp-tls-ca") == OTLP_TLS_FILES["otlp-tls-ca"], "%s --otlp-tls-ca" % c["name"])
        for f in ("otlp-tls-cert", "otlp-tls-key", "otlp-tls-server-name", "otlp-tls-refresh-seconds"):
            check(not flag(docs, c, f), "%s: no --%s" % (c["name"], f))
        check_otlp_tls_mount(o, c, "otel-ca", ["ca.crt"])
    # tracing.tls.enabled=false: the other tracing.tls values change nothing.
    check_no_otlp_tls(render(*OTLP, "--set", "tracing.tls.secretName=otel-client",
                             "--set", "tracing.tls.clientCertificate=true")[0], "with tracing.tls.enabled=false")


@case
def tracing_tls_system_roots():
    docs, _ = render(*OTLP, "--set", "tracing.tls.enabled=true")
    for o, c in services(docs):
        got = [a for a in c["args"] if a.startswith("--otlp-tls")]
        check(got == ["--otlp-tls"], "%s: just --otlp-tls with the system's roots, got %s" % (c["name"], got))
        i = c["args"].index("--otlp-endpoint=$(UNMASK_OTLP_ENDPOINT)")
        check(c["args"][i + 1] == "--otlp-tls", "%s: --otlp-tls follows --otlp-endpoint" % c["name"])
        check(not any(m["name"] == "otlp-tls" for m in c.get("volumeMounts", [])), "%s: no tracing TLS mount" % c["name"])
    for o in objs(docs):
        if o["kind"] in ("Deployment", "StatefulSet", "Pod"):
            check(not any(v["name"] == "otlp-tls" for v in pod_spec(o).get("volumes", []) or []),
                  "%s: no tracing TLS volume without a Secret" % o["metadata"]["name"])
    docs, _ = render(*OTLP, "--set", "tracing.tls.enabled=true", "--set", "tracing.tls.serverName=otel.internal")
    for _, c in services(docs):
        check(flag1(docs, c, "otlp-tls-server-name") == "otel.internal", "%s --otlp-tls-server-name" % c["name"])


METRICS_TLS_FILES = {"metrics-tls-cert": "/etc/unmask-metrics-tls/tls.crt", "metrics-tls-key": "/etc/unmask-metrics-tls/tls.key",
                     "metrics-tls-ca": "/etc/unmask-metrics-tls/ca.crt"}
METRICS_TLS = ["--set", "metrics.tls.enabled=true", "--set", "metrics.tls.secretName=unmask-metrics-tls"]
SERVICE_MONITOR = ["--set", "metrics.serviceMonitor.enabled=true", "--set", "worker.executorsPerGpu=2"]
METRICS_PORTS = {"metrics", "loader-metrics", "exec-metrics-0", "exec-metrics-1"}


def check_no_metrics_tls(docs, why):
    for o in objs(docs):
        if o["kind"] in ("Deployment", "StatefulSet", "Pod"):
            check(not any(v["name"] == "metrics-tls" for v in pod_spec(o).get("volumes", []) or []),
                  "%s has the metrics-tls volume %s" % (o["metadata"]["name"], why))
            for c in containers(o, init=True):
                check(not any(a.startswith("--metrics-tls") for a in c.get("args", []) or []),
                      "%s has --metrics-tls flags %s" % (c["name"], why))
        if o["kind"] == "ServiceMonitor":
            for ep in o["spec"]["endpoints"]:
                check("scheme" not in ep and "tlsConfig" not in ep, "ServiceMonitor endpoint %s is not plain HTTP %s" % (ep, why))


def check_metrics_tls_mount(o, c, secret, items, mount="/etc/unmask-metrics-tls"):
    vols = {v["name"]: v for v in pod_spec(o)["volumes"]}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    m = mounts.get(mount)
    check(m and m.get("readOnly") is True, "%s must mount the metrics TLS Secret read-only at %s: %s" % (c["name"], mount, mounts))
    check(m["name"] == "metrics-tls", "%s: the metrics TLS mount is the volume metrics-tls, not %s" % (c["name"], m["name"]))
    check(vols[m["name"]]["secret"]["secretName"] == secret, "%s mounts %s, want the Secret %s" % (c["name"], vols[m["name"]], secret))
    got = sorted(i["path"] for i in vols[m["name"]]["secret"]["items"])
    check(got == items, "metrics TLS items %s, want %s" % (got, items))


def check_metrics_tls_args(docs, c, files, refresh="60", mutual=False):
    """The --metrics-tls-* flags of one service, right after its --metrics-listen."""
    for f in ("metrics-tls-cert", "metrics-tls-key"):
        check(flag1(docs, c, f) == files[f], "%s --%s=%s, want %s" % (c["name"], f, flag1(docs, c, f), files[f]))
    if mutual:
        check(flag1(docs, c, "metrics-tls-ca") == files["metrics-tls-ca"], "%s --metrics-tls-ca" % c["name"])
        check(c["args"].count("--metrics-tls-require-client-cert") == 1, "%s: one --metrics-tls-require-client-cert" % c["name"])
    else:
        check(not flag(docs, c, "metrics-tls-ca"), "%s: no --metrics-tls-ca without requireClientCert" % c["name"])
        check("--metrics-tls-require-client-cert" not in c["args"], "%s: no mutual TLS without requireClientCert" % c["name"])
    if refresh:
        check(flag1(docs, c, "metrics-tls-refresh-seconds") == refresh, "%s re-reads its metrics TLS files every %s s" % (c["name"], refresh))
    else:
        check(not flag(docs, c, "metrics-tls-refresh-seconds"), "%s: refreshSeconds=0 reads once" % c["name"])
    i = [n for n, a in enumerate(c["args"]) if a.startswith("--metrics-listen=")][0]
    check(c["args"][i + 1].startswith("--metrics-tls-"), "%s: the metrics TLS flags follow --metrics-listen: %s" % (c["name"], c["args"]))


def service_monitor_endpoints(docs):
    sm = objs(docs, "ServiceMonitor")
    check(len(sm) == 1, "expected one ServiceMonitor, found %d" % len(sm))
    eps = sm[0]["spec"]["endpoints"]
    check({ep["port"] for ep in eps} == METRICS_PORTS, "ServiceMonitor endpoints %s" % [ep["port"] for ep in eps])
    return eps


@case
def metrics_tls():
    # Off by default, and metrics.tls.enabled=false renders byte for byte what it renders without
    # metrics.tls (a fixed key file: the generated API key differs on every render).
    check_no_metrics_tls(render(*SERVICE_MONITOR)[0], "by default")
    fixed = ["--set", "scheduler.apiKeys.entries={sha256:%s}" % ("c" * 64)]
    others = ["--set", "metrics.tls.secretName=unmask-metrics-tls", "--set", "metrics.tls.requireClientCert=true",
              "--set", "metrics.tls.serverName=metrics.internal", "--set", "metrics.tls.refreshSeconds=5",
              "--set", "metrics.tls.mountPath=/certs"]
    for extra in ([], SERVICE_MONITOR, SERVICE_MONITOR + ["--set", "tls.enabled=true", "--set", "tls.secretName=my-tls"]):
        want = run_renderer(fixed + extra)
        check(want.returncode == 0, want.stderr)
        for more in (["--set", "metrics.tls.enabled=false"], others):
            got = run_renderer(fixed + extra + more)
            check(got.returncode == 0 and got.stdout == want.stdout,
                  "metrics.tls.enabled=false must render what the chart renders without it (%s)" % " ".join(extra + more))
    # HTTPS on every service's /metrics (scheduler, loader, two executors), scraped over https.
    docs, _ = render(*(METRICS_TLS + SERVICE_MONITOR))
    svcs = services(docs)
    check(len(svcs) == 4, "scheduler, loader and two executors: %s" % [c["name"] for _, c in svcs])
    for o, c in svcs:
        check_metrics_tls_args(docs, c, METRICS_TLS_FILES)
        check_metrics_tls_mount(o, c, "unmask-metrics-tls", ["tls.crt", "tls.key"])
    test_pod = objs(docs, "Pod")[0]
    check(not any(v["name"] == "metrics-tls" for v in pod_spec(test_pod)["volumes"]), "helm test does not scrape metrics")
    for ep in service_monitor_endpoints(docs):
        check(ep.get("scheme") == "https", "ServiceMonitor endpoint %s must scrape with scheme https" % ep["port"])
        check(ep.get("tlsConfig") == {"ca": {"secret": {"name": "unmask-metrics-tls", "key": "ca.crt"}}},
              "ServiceMonitor endpoint %s tlsConfig: the Secret's ca.crt only (verified, no insecureSkipVerify): %s"
              % (ep["port"], ep.get("tlsConfig")))
    # Read once, another mount path, the name Prometheus checks; no ServiceMonitor: the flags alone.
    docs, _ = render(*(METRICS_TLS + SERVICE_MONITOR), "--set", "metrics.tls.refreshSeconds=0",
                     "--set", "metrics.tls.mountPath=/certs/metrics", "--set", "metrics.tls.serverName=llm-unmask.inference.svc")
    files = {k: v.replace("/etc/unmask-metrics-tls", "/certs/metrics") for k, v in METRICS_TLS_FILES.items()}
    for o, c in services(docs):
        check_metrics_tls_args(docs, c, files, refresh=None)
        check_metrics_tls_mount(o, c, "unmask-metrics-tls", ["tls.crt", "tls.key"], mount="/certs/metrics")
    for ep in service_monitor_endpoints(docs):
        tc = ep["tlsConfig"]
        check(tc.get("serverName") == "llm-unmask.inference.svc", "tlsConfig.serverName from metrics.tls.serverName: %s" % tc)
        check("insecureSkipVerify" not in tc and "cert" not in tc and "keySecret" not in tc, "tlsConfig %s" % tc)
    docs, _ = render(*METRICS_TLS)
    none_of(docs, "ServiceMonitor")
    for o, c in services(docs):
        check_metrics_tls_args(docs, c, METRICS_TLS_FILES)


@case
def metrics_tls_mutual():
    # Mutual TLS on /metrics, next to the services' own TLS and the tracing TLS (three Secrets).
    docs, _ = render(*(METRICS_TLS + SERVICE_MONITOR), "--set", "metrics.tls.requireClientCert=true",
                     "--set", "tls.enabled=true", "--set", "tls.secretName=my-tls",
                     *OTLP, "--set", "tracing.tls.enabled=true", "--set", "tracing.tls.secretName=otel-ca")
    svcs = services(docs)
    check(len(svcs) == 4, "scheduler, loader and two executors: %s" % [c["name"] for _, c in svcs])
    for o, c in svcs:
        check_metrics_tls_args(docs, c, METRICS_TLS_FILES, mutual=True)
        check_metrics_tls_mount(o, c, "unmask-metrics-tls", ["ca.crt", "tls.crt", "tls.key"])
        check_tls_mount(docs, o, c, "my-tls")
        check_otlp_tls_mount(o, c, "otel-ca", ["ca.crt"])
        check(flag1(docs, c, "tls-cert") == "/etc/unmask-tls/tls.crt", "%s keeps its gRPC --tls-cert" % c["name"])
    want = {"ca": {"secret": {"name": "unmask-metrics-tls", "key": "ca.crt"}},
            "cert": {"secret": {"name": "unmask-metrics-tls", "key": "tls.crt"}},
            "keySecret": {"name": "unmask-metrics-tls", "key": "tls.key"}}
    for ep in service_monitor_endpoints(docs):
        check(ep.get("scheme") == "https", "ServiceMonitor endpoint %s must scrape with scheme https" % ep["port"])
        check(ep.get("tlsConfig") == want, "ServiceMonitor endpoint %s tlsConfig %s, want %s" % (ep["port"], ep.get("tlsConfig"), want))
    docs, _ = render(*(METRICS_TLS + SERVICE_MONITOR), "--set", "metrics.tls.requireClientCert=true",
                     "--set", "metrics.tls.serverName=llm-unmask")
    for ep in service_monitor_endpoints(docs):
        check(ep["tlsConfig"] == dict(want, serverName="llm-unmask"), "tlsConfig with serverName: %s" % ep["tlsConfig"])


REDIS_TLS_FILES = {"redis-tls-ca": "/etc/unmask-redis-tls/ca.crt", "redis-tls-cert": "/etc/unmask-redis-tls/tls.crt",
                   "redis-tls-key": "/etc/unmask-redis-tls/tls.key"}
EXTERNAL_REDIS = ["--set", "redis.mode=external", "--set", "redis.external.address=redis.example.com:6380"]
REDIS_TLS = EXTERNAL_REDIS + ["--set", "redis.external.tls.enabled=true"]


def redis_tls_args(docs, c):
    """The --redis-tls* flags of a container, checked to follow its --redis (if it has any)."""
    got = [a for a in c.get("args", []) or [] if a.startswith("--redis-tls")]
    if got:
        i = c["args"].index("--redis=$(UNMASK_REDIS)")
        check(c["args"][i + 1:i + 1 + len(got)] == got, "%s: the Redis TLS flags follow --redis: %s" % (c["name"], c["args"]))
    return got


def check_no_redis_tls(docs, why):
    for o in objs(docs):
        if o["kind"] in ("Deployment", "StatefulSet", "Pod"):
            check(not any(v["name"] == "redis-tls" for v in pod_spec(o).get("volumes", []) or []),
                  "%s has the redis-tls volume %s" % (o["metadata"]["name"], why))
            for c in containers(o, init=True):
                check(not redis_tls_args(docs, c), "%s has --redis-tls flags %s" % (c["name"], why))


def check_redis_tls_mount(o, c, secret, items, mount="/etc/unmask-redis-tls"):
    vols = {v["name"]: v for v in pod_spec(o)["volumes"]}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    m = mounts.get(mount)
    check(m and m.get("readOnly") is True, "%s must mount the Redis TLS Secret read-only at %s: %s" % (c["name"], mount, mounts))
    check(m["name"] == "redis-tls", "%s: the Redis TLS mount is the volume redis-tls, not %s" % (c["name"], m["name"]))
    check(vols[m["name"]]["secret"]["secretName"] == secret, "%s mounts %s, want the Secret %s" % (c["name"], vols[m["name"]], secret))
    got = sorted(i["path"] for i in vols[m["name"]]["secret"]["items"])
    check(got == items, "Redis TLS items %s, want %s" % (got, items))


def check_redis_tls_only_scheduler(docs):
    """The loader, the executors and helm test never talk to Redis: no Redis TLS flag or volume."""
    for o in objs(docs):
        if o["kind"] in ("StatefulSet", "Pod"):
            check(not any(v["name"] == "redis-tls" for v in pod_spec(o).get("volumes", []) or []),
                  "%s has the redis-tls volume" % o["metadata"]["name"])
            for c in containers(o, init=True):
                check(not any(a.startswith("--redis") for a in c.get("args", []) or []), "%s has --redis flags" % c["name"])


@case
def redis_tls():
    # Off by default; redis.external.tls.enabled=false renders byte for byte what the chart renders
    # without redis.external.tls (a fixed key file: the generated API key differs on every render).
    check_no_redis_tls(render()[0], "by default")
    check_no_redis_tls(render(*EXTERNAL_REDIS)[0], "with an external Redis")
    fixed = ["--set", "scheduler.apiKeys.entries={sha256:%s}" % ("c" * 64)]
    others = ["--set", "redis.external.tls.secretName=redis-client", "--set", "redis.external.tls.clientCertificate=true",
              "--set", "redis.external.tls.caCertificate=false", "--set", "redis.external.tls.serverName=redis.internal",
              "--set", "redis.external.tls.mountPath=/certs"]
    for extra in ([], EXTERNAL_REDIS, ["--set", "redis.mode=none"],
                  EXTERNAL_REDIS + ["--set", "tls.enabled=true", "--set", "tls.secretName=my-tls"]):
        want = run_renderer(fixed + extra)
        check(want.returncode == 0, want.stderr)
        for more in (["--set", "redis.external.tls.enabled=false"], others):
            got = run_renderer(fixed + extra + more)
            check(got.returncode == 0 and got.stdout == want.stdout,
                  "redis.external.tls.enabled=false must render what the chart renders without it (%s)" % " ".join(extra + more))
    # An external Redis over TLS checked against the Secret's ca.crt, next to the services' own TLS
    # (whose tls.refreshSeconds must not give the scheduler a --redis-tls-refresh-seconds).
    docs, notes = render(*REDIS_TLS, "--set", "redis.external.tls.secretName=redis-ca",
                         "--set", "tls.enabled=true", "--set", "tls.secretName=my-tls")
    dep = one(docs, "Deployment", "scheduler")
    sched = container(dep, "scheduler")
    check(flag1(docs, sched, "redis") == "redis.example.com:6380", "scheduler --redis is the external address")
    got = redis_tls_args(docs, sched)
    want = ["--redis-tls", "--redis-tls-ca=%s" % REDIS_TLS_FILES["redis-tls-ca"]]
    check(got == want, "scheduler Redis TLS flags %s, want %s" % (got, want))
    check(not any("redis-tls-refresh-seconds" in a for a in sched["args"]), "no --redis-tls-refresh-seconds (it must stay 0)")
    check(flag1(docs, sched, "executor-tls-refresh-seconds") == "60", "the executor TLS still re-reads its files")
    check_redis_tls_mount(dep, sched, "redis-ca", ["ca.crt"])
    check_tls_mount(docs, dep, sched, "my-tls")
    check_redis_tls_only_scheduler(docs)
    check("external Redis at redis.example.com:6380" in notes, "NOTES names the external Redis")
    # Another mount path.
    docs, _ = render(*REDIS_TLS, "--set", "redis.external.tls.secretName=redis-ca", "--set", "redis.external.tls.mountPath=/certs/redis")
    dep = one(docs, "Deployment", "scheduler")
    sched = container(dep, "scheduler")
    check(flag1(docs, sched, "redis-tls-ca") == "/certs/redis/ca.crt", "--redis-tls-ca follows redis.external.tls.mountPath")
    check_redis_tls_mount(dep, sched, "redis-ca", ["ca.crt"], mount="/certs/redis")


@case
def redis_tls_mutual():
    # Mutual TLS toward Redis with a name of its own, next to the services' own TLS, the tracing TLS
    # and the metrics TLS (four Secrets in the scheduler).
    docs, _ = render(*REDIS_TLS, "--set", "redis.external.tls.secretName=redis-client",
                     "--set", "redis.external.tls.clientCertificate=true", "--set", "redis.external.tls.serverName=redis.internal",
                     "--set", "tls.enabled=true", "--set", "tls.secretName=my-tls", *OTLP, "--set", "tracing.tls.enabled=true",
                     "--set", "tracing.tls.secretName=otel-ca", *METRICS_TLS)
    dep = one(docs, "Deployment", "scheduler")
    sched = container(dep, "scheduler")
    got = redis_tls_args(docs, sched)
    want = ["--redis-tls"] + ["--%s=%s" % (f, p) for f, p in REDIS_TLS_FILES.items()] + ["--redis-tls-server-name=redis.internal"]
    check(got == want, "scheduler Redis TLS flags %s, want %s" % (got, want))
    check(not any("redis-tls-refresh-seconds" in a for a in sched["args"]), "no --redis-tls-refresh-seconds (it must stay 0)")
    check_redis_tls_mount(dep, sched, "redis-client", ["ca.crt", "tls.crt", "tls.key"])
    check_tls_mount(docs, dep, sched, "my-tls")
    check_otlp_tls_mount(dep, sched, "otel-ca", ["ca.crt"])
    check_metrics_tls_mount(dep, sched, "unmask-metrics-tls", ["tls.crt", "tls.key"])
    check(len({v["name"] for v in pod_spec(dep)["volumes"]}) == len(pod_spec(dep)["volumes"]), "volume names are unique")
    check_redis_tls_only_scheduler(docs)


@case
def redis_tls_system_roots():
    # caCertificate=false: the system's roots; without a client certificate no Secret at all.
    docs, _ = render(*REDIS_TLS, "--set", "redis.external.tls.caCertificate=false")
    dep = one(docs, "Deployment", "scheduler")
    sched = container(dep, "scheduler")
    check(redis_tls_args(docs, sched) == ["--redis-tls"], "just --redis-tls with the system's roots: %s" % redis_tls_args(docs, sched))
    check(not any(v["name"] == "redis-tls" for v in pod_spec(dep)["volumes"]), "no Redis TLS volume without a Secret")
    check(not any(m["name"] == "redis-tls" for m in sched["volumeMounts"]), "no Redis TLS mount without a Secret")
    # A Secret named but unused (no CA, no client certificate) is not mounted either.
    docs2, _ = render(*REDIS_TLS, "--set", "redis.external.tls.caCertificate=false", "--set", "redis.external.tls.secretName=unused")
    check(one(docs2, "Deployment", "scheduler") == dep, "an unused Secret changes nothing")
    docs, _ = render(*REDIS_TLS, "--set", "redis.external.tls.caCertificate=false", "--set", "redis.external.tls.serverName=redis.internal")
    got = redis_tls_args(docs, container(one(docs, "Deployment", "scheduler"), "scheduler"))
    check(got == ["--redis-tls", "--redis-tls-server-name=redis.internal"], "system's roots with a server name: %s" % got)
    # A client certificate checked by a Redis whose own certificate chains to the system's roots.
    docs, _ = render(*REDIS_TLS, "--set", "redis.external.tls.caCertificate=false", "--set", "redis.external.tls.clientCertificate=true",
                     "--set", "redis.external.tls.secretName=redis-client")
    dep = one(docs, "Deployment", "scheduler")
    sched = container(dep, "scheduler")
    want = ["--redis-tls", "--redis-tls-cert=%s" % REDIS_TLS_FILES["redis-tls-cert"], "--redis-tls-key=%s" % REDIS_TLS_FILES["redis-tls-key"]]
    check(redis_tls_args(docs, sched) == want, "client certificate, system's roots: %s" % redis_tls_args(docs, sched))
    check_redis_tls_mount(dep, sched, "redis-client", ["tls.crt", "tls.key"])


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


@case
def fail_external_redis_without_address():
    render_fails(["--set", "redis.mode=external"],
                 "redis.external.address is required when redis.mode=external")


@case
def fail_tracing_tls_to_bundled_jaeger():
    render_fails(["--set", "tracing.tls.enabled=true"], "tracing.tls.enabled needs tracing.otlpEndpoint")
    render_fails(["--set", "tracing.tls.enabled=true", "--set", "tracing.tls.secretName=otel-ca"],
                 "tracing.tls.enabled needs tracing.otlpEndpoint")


@case
def fail_tracing_tls_client_cert_without_secret():
    render_fails(OTLP + ["--set", "tracing.tls.enabled=true", "--set", "tracing.tls.clientCertificate=true"],
                 "tracing.tls.secretName is required with tracing.tls.clientCertificate")


@case
def fail_metrics_tls_without_secret():
    render_fails(["--set", "metrics.tls.enabled=true"], "metrics.tls.secretName is required when metrics.tls.enabled")
    render_fails(SERVICE_MONITOR + ["--set", "metrics.tls.enabled=true", "--set", "metrics.tls.requireClientCert=true"],
                 "metrics.tls.secretName is required when metrics.tls.enabled")


@case
def fail_redis_tls_without_external_redis():
    render_fails(["--set", "redis.external.tls.enabled=true", "--set", "redis.external.tls.secretName=redis-ca"],
                 "redis.external.tls.enabled needs redis.mode=external (redis.mode is bundled)")
    render_fails(["--set", "redis.mode=none", "--set", "redis.external.tls.enabled=true", "--set", "redis.external.tls.secretName=redis-ca"],
                 "redis.external.tls.enabled needs redis.mode=external (redis.mode is none)")


@case
def fail_redis_tls_without_secret():
    render_fails(REDIS_TLS, "redis.external.tls.secretName is required when redis.external.tls.enabled")
    render_fails(REDIS_TLS + ["--set", "redis.external.tls.clientCertificate=true"],
                 "redis.external.tls.secretName is required with redis.external.tls.clientCertificate")
    render_fails(REDIS_TLS + ["--set", "redis.external.tls.caCertificate=false", "--set", "redis.external.tls.clientCertificate=true"],
                 "redis.external.tls.secretName is required with redis.external.tls.clientCertificate")


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
    def inline_settings(d):  # the settings copied into env instead of read from the ConfigMap
        c = worker_spec(d)["containers"][1]
        c["env"] = [{"name": k, "value": v} for k, v in one(d, "ConfigMap", None)["data"].items()]
        c.pop("envFrom")
    broken(inline_settings, "settings not from the chart's ConfigMap")


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
