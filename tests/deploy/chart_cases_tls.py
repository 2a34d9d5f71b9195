"""check_chart.py's TLS cases: the gRPC listeners and clients (tls), the span export
(tracing.tls), /metrics over HTTPS (metrics.tls) and the scheduler's Redis connection
(redis.external.tls), each with its Secret's mount and the flags it adds."""

from chart_lib import *  # noqa: F401,F403
from chart_registry import case


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
