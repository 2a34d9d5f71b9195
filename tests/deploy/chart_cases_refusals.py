"""check_chart.py's fail_* cases: wrong values are refused with the chart's own message."""

from chart_lib import *  # noqa: F401,F403
from chart_cases_tls import OTLP, REDIS_TLS, SERVICE_MONITOR
from chart_registry import case


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
def fail_bad_http_ports():
    render_fails(["--set", "scheduler.http.port=0"], "- scheduler.http.port: Must be greater than or equal to 1")
    render_fails(["--set", "scheduler.http.port=70000"], "- scheduler.http.port: Must be less than or equal to 65535")
    render_fails(["--set", "scheduler.http.port=http"], "- scheduler.http.port: Invalid type. Expected: integer, given: string")
    render_fails(["--set", "scheduler.service.httpPort=0"], "- scheduler.service.httpPort: Must be greater than or equal to 1")
    render_fails(["--set", "scheduler.service.httpPort=70000"], "- scheduler.service.httpPort: Must be less than or equal to 65535")
    render_fails(["--set-string", "scheduler.service.httpPort=8000"],
                 "- scheduler.service.httpPort: Invalid type. Expected: integer, given: string")
    render_fails(["--set", "scheduler.http.enabled=yes"], "- scheduler.http.enabled: Invalid type. Expected: boolean, given: string")
    render_fails(["--set", "scheduler.http.host=0.0.0.0"], "- scheduler.http: Additional property host is not allowed")


@case
def fail_scheduler_port_collision():
    render_fails(["--set", "scheduler.http.port=50051"], "scheduler ports collide")
    render_fails(["--set", "scheduler.service.httpPort=9091"], "scheduler ports collide")
    render_fails(["--set", "scheduler.http.enabled=false", "--set", "scheduler.service.port=9091"], "scheduler ports collide")
