"""check_chart.py's cases of the chart's shape: the default render, the queue modes, tracing
off, GPUs and executors per GPU, DRA, the ServiceMonitor, placement and resources, model
sources and API keys."""
import base64
import hashlib
import json
import re

from chart_lib import *  # noqa: F401,F403
from chart_registry import case


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
    vol = check_models_mounts(docs)  # the scheduler and the worker pods: the same volume
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
    """Each models.source gives the worker pods and the scheduler (tokenizers) the same volume."""
    docs, notes = render()
    vol = check_models_mounts(docs)
    check(vol == {"name": "models", "persistentVolumeClaim": {"claimName": one(docs, "PersistentVolumeClaim", "models")["metadata"]["name"],
                                                              "readOnly": True}}, "pvc models volume: %s" % vol)
    check("access modes (ReadWriteOnce)" in notes, "NOTES warn that a ReadWriteOnce claim keeps the pods on one node")
    docs, notes = render("--set", "models.pvc.accessModes={ReadOnlyMany}")
    check_models_mounts(docs)
    check("access modes" not in notes, "no access-mode warning with ReadOnlyMany")
    docs, _ = render("--set", "models.source=hostPath", "--set", "models.hostPath.path=/srv/models")
    none_of(docs, "PersistentVolumeClaim")
    vol = check_models_mounts(docs)
    check(vol == {"name": "models", "hostPath": {"path": "/srv/models", "type": "Directory"}}, "hostPath models volume: %s" % vol)
    docs, _ = render("--set", "models.source=existingClaim", "--set", "models.existingClaim=llm-weights")
    none_of(docs, "PersistentVolumeClaim")
    vol = check_models_mounts(docs)
    check(vol == {"name": "models", "persistentVolumeClaim": {"claimName": "llm-weights", "readOnly": True}},
          "existingClaim models volume: %s" % vol)
    docs, _ = render("--set", "models.mountPath=/weights")
    loader = container(one(docs, "StatefulSet", "worker"), "loader")
    check(flag1(docs, loader, "model-root") == "/weights", "--model-root follows models.mountPath")
    check_models_mounts(docs, "/weights")


@case
def scheduler_http():
    """The OpenAI-compatible HTTP API: on by default (--http-port, container and Service port http,
    NOTES), off with scheduler.http.enabled=false, ports from values, https with tls.enabled."""
    docs, notes = render()
    check_scheduler_http(docs)
    sched = "%s-unmask-scheduler" % RELEASE
    for text in ("port-forward svc/%s 8000:8000" % sched, "KEY=$(cat ./api-key)", "http://127.0.0.1:8000/v1/completions",
                 'Authorization: Bearer $KEY', '"model": "LLaDA-8B-Instruct"'):
        check(text in notes, "NOTES should show %r:\n%s" % (text, notes))
    docs, notes = render("--set", "scheduler.http.enabled=false")
    check_scheduler_http(docs, None)
    check("/v1/completions" not in notes and "8000" not in notes, "NOTES without the HTTP API:\n%s" % notes)
    docs, notes = render("--set", "scheduler.http.port=8080", "--set", "scheduler.service.httpPort=9000")
    check_scheduler_http(docs, 8080, 9000)
    check("port-forward svc/%s 9000:9000" % sched in notes and "http://127.0.0.1:9000/v1/completions" in notes,
          "NOTES use scheduler.service.httpPort:\n%s" % notes)
    docs, notes = render("--set", "scheduler.apiKeys.enabled=false")
    check_scheduler_http(docs)
    check("/v1/completions" in notes and "Authorization" not in notes, "NOTES without keys send no Authorization header")
    # With TLS the HTTP API serves HTTPS with the gRPC certificate (the --tls-* flags, no --http-tls-*).
    docs, notes = render("--set", "tls.enabled=true", "--set", "tls.secretName=my-tls")
    check_scheduler_http(docs, tls=True)
    c = container(one(docs, "Deployment", "scheduler"), "scheduler")
    check(flag1(docs, c, "tls-cert") and not any(a.startswith("--http-tls") for a in c["args"]), "HTTPS from the --tls-* flags: %s" % c["args"])
    name = "%s-unmask" % RELEASE
    for text in ("https://%s:8000/v1/completions" % name, "--connect-to %s:8000:127.0.0.1:8000" % name,
                 "--cacert ./ca.crt --cert ./tls.crt --key ./tls.key"):
        check(text in notes, "NOTES should show %r with TLS:\n%s" % (text, notes))
    # The ports of a disabled HTTP API collide with nothing (the collisions: fail_scheduler_port_collision).
    docs, _ = render("--set", "scheduler.http.enabled=false", "--set", "scheduler.http.port=9091")
    check_scheduler_http(docs, None)


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
