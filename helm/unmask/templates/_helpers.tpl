{{/* Names ------------------------------------------------------------------------------------ */}}

{{/* The chart name, or nameOverride. */}}
{{- define "unmask.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every resource name: RELEASE-unmask, RELEASE when it contains the chart name, or fullnameOverride. */}}
{{- define "unmask.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A component's resource name: (dict "ctx" $ "component" "scheduler") -> RELEASE-unmask-scheduler. */}}
{{- define "unmask.componentName" -}}
{{- printf "%s-%s" (include "unmask.fullname" .ctx | trunc 50 | trimSuffix "-") .component -}}
{{- end -}}

{{/* chart label value: name-version. */}}
{{- define "unmask.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels ----------------------------------------------------------------------------------- */}}

{{/* Selector labels of the release (add app.kubernetes.io/component per component). */}}
{{- define "unmask.selectorLabels" -}}
app.kubernetes.io/name: {{ include "unmask.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every resource. */}}
{{- define "unmask.labels" -}}
helm.sh/chart: {{ include "unmask.chart" . }}
{{ include "unmask.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: unmask
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of a component's resources: (dict "ctx" $ "component" "worker"). */}}
{{- define "unmask.componentLabels" -}}
{{ include "unmask.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Selector labels of a component: (dict "ctx" $ "component" "worker"). */}}
{{- define "unmask.componentSelectorLabels" -}}
{{ include "unmask.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Images and accounts ---------------------------------------------------------------------- */}}

{{/* An unmask image: (dict "ctx" $ "flavor" "cpu"|"cuda"). */}}
{{- define "unmask.image" -}}
{{- $img := index .ctx.Values.image .flavor -}}
{{- printf "%s:%s" $img.repository (default .ctx.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* The image of the worker pods: CUDA with a GPU, CPU otherwise. */}}
{{- define "unmask.workerImage" -}}
{{- include "unmask.image" (dict "ctx" . "flavor" (ternary "cuda" "cpu" .Values.worker.gpu.enabled)) -}}
{{- end -}}

{{- define "unmask.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "unmask.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Pod spec fields shared by the unmask pods. */}}
{{- define "unmask.podCommon" -}}
serviceAccountName: {{ include "unmask.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountToken }}
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds | int64 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Settings --------------------------------------------------------------------------------- */}}

{{/* host:port of Redis, empty for the in-process queue. */}}
{{- define "unmask.redisAddress" -}}
{{- if eq .Values.redis.mode "bundled" -}}
{{- printf "%s:6379" (include "unmask.componentName" (dict "ctx" . "component" "redis")) -}}
{{- else if eq .Values.redis.mode "external" -}}
{{- required "redis.external.address is required when redis.mode=external (host:port of your Redis server)" .Values.redis.external.address -}}
{{- end -}}
{{- end -}}

{{/* The OTLP endpoint, empty when tracing is off. */}}
{{- define "unmask.otlpEndpoint" -}}
{{- if .Values.tracing.enabled -}}
{{- if .Values.tracing.otlpEndpoint -}}
{{- .Values.tracing.otlpEndpoint -}}
{{- else if .Values.jaeger.enabled -}}
{{- printf "%s:4317" (include "unmask.componentName" (dict "ctx" . "component" "jaeger")) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The model the executors serve: worker.executor.model, or the first preload entry without its precision. */}}
{{- define "unmask.executorModel" -}}
{{- $model := .Values.worker.executor.model -}}
{{- if and (not $model) .Values.worker.loader.preload -}}
{{- $model = first .Values.worker.loader.preload | splitList ":" | first -}}
{{- end -}}
{{- required "worker.executor.model is required when worker.loader.preload is empty (the executors need a model to serve)" $model -}}
{{- end -}}

{{/* Name of the headless Service that lists the worker pods (executor discovery). */}}
{{- define "unmask.workerServiceName" -}}
{{- include "unmask.componentName" (dict "ctx" . "component" "worker") -}}
{{- end -}}

{{/* --executors-dns value: headless-service:port for every executor index. */}}
{{- define "unmask.executorsDNS" -}}
{{- $svc := printf "%s.%s.svc" (include "unmask.workerServiceName" .) .Release.Namespace -}}
{{- $out := list -}}
{{- range $i := until (int .Values.worker.executorsPerGpu) -}}
{{- $out = append $out (printf "%s:%d" $svc (add $.Values.worker.executor.port $i)) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* The Secret with the API keys. */}}
{{- define "unmask.apiKeysSecretName" -}}
{{- default (include "unmask.componentName" (dict "ctx" . "component" "api-keys")) .Values.scheduler.apiKeys.existingSecret -}}
{{- end -}}

{{/* The models volume (a list item): the checkpoints of models.source, read-only. The loader and
       the executors read the weights from it, the scheduler the tokenizers; one definition, so
       that the worker pods and the scheduler pods cannot mount different sources. */}}
{{- define "unmask.modelsVolume" -}}
- name: models
  {{- if eq .Values.models.source "pvc" }}
  persistentVolumeClaim:
    claimName: {{ include "unmask.componentName" (dict "ctx" . "component" "models") }}
    readOnly: true
  {{- else if eq .Values.models.source "existingClaim" }}
  persistentVolumeClaim:
    claimName: {{ .Values.models.existingClaim }}
    readOnly: true
  {{- else }}
  hostPath:
    path: {{ .Values.models.hostPath.path }}
    type: {{ .Values.models.hostPath.type }}
  {{- end }}
{{- end -}}

{{/* The volumeMount (a list item) of the models volume at models.mountPath, read-only. */}}
{{- define "unmask.modelsVolumeMount" -}}
- name: models
  mountPath: {{ .Values.models.mountPath }}
  readOnly: true
{{- end -}}

{{/* Probes: (dict "port" N "probes" .Values.x.probes "ctx" $). gRPC-native; with tls.enabled
       an exec probe running `unmask health` over TLS instead (Kubernetes' gRPC probes cannot
       speak TLS). */}}
{{- define "unmask.grpcProbes" -}}
{{- $port := .port | int -}}
{{- $tls := .ctx.Values.tls -}}
{{- range $i, $kind := list "startup" "liveness" "readiness" }}
{{- $p := index $.probes $kind }}{{ if $i }}{{ "\n" }}{{ end }}{{ $kind }}Probe:
  {{- if $tls.enabled }}
  exec:
    command:
      - unmask
      - --timeout={{ $p.timeoutSeconds | int }}
      {{- include "unmask.tlsClientArgs" (dict "ctx" $.ctx "peer" "") | nindent 6 }}
      - health
      - --addr=127.0.0.1:{{ $port }}
  {{- else }}
  grpc:
    port: {{ $port }}
  {{- end }}
  periodSeconds: {{ $p.periodSeconds | int }}
  timeoutSeconds: {{ $p.timeoutSeconds | int }}
  failureThreshold: {{ $p.failureThreshold | int }}
{{- end }}
{{- end -}}

{{/* TLS --------------------------------------------------------------------------------------- */}}

{{/* The name every client checks the services' certificate for (tls.serverName or the fullname). */}}
{{- define "unmask.tlsServerName" -}}
{{- default (include "unmask.fullname" .) .Values.tls.serverName -}}
{{- end -}}

{{/* A service's server flags (the list items), empty when tls.enabled is false. */}}
{{- define "unmask.tlsServerArgs" -}}
{{- if .Values.tls.enabled -}}
{{- $d := .Values.tls.mountPath -}}
- --tls-cert={{ $d }}/tls.crt
- --tls-key={{ $d }}/tls.key
- --tls-ca={{ $d }}/ca.crt
{{- if .Values.tls.requireClientCert }}
- --tls-require-client-cert
{{- end }}
{{- if gt (int .Values.tls.refreshSeconds) 0 }}
- --tls-refresh-seconds={{ .Values.tls.refreshSeconds }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* A client's flags for one peer: (dict "ctx" $ "peer" "loader"); peer "" for the CLI. The
       services' certificate doubles as the client certificate. */}}
{{- define "unmask.tlsClientArgs" -}}
{{- if .ctx.Values.tls.enabled -}}
{{- $d := .ctx.Values.tls.mountPath -}}
{{- $f := printf "--%stls-" (ternary "" (printf "%s-" .peer) (eq .peer "")) -}}
- {{ $f }}ca={{ $d }}/ca.crt
- {{ $f }}cert={{ $d }}/tls.crt
- {{ $f }}key={{ $d }}/tls.key
- {{ $f }}server-name={{ include "unmask.tlsServerName" .ctx }}
{{- if and (gt (int .ctx.Values.tls.refreshSeconds) 0) (ne .peer "") }}
- {{ $f }}refresh-seconds={{ .ctx.Values.tls.refreshSeconds }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The volumeMount (a list item) of the TLS Secret, empty when tls.enabled is false. */}}
{{- define "unmask.tlsVolumeMount" -}}
{{- if .Values.tls.enabled -}}
- name: tls
  mountPath: {{ .Values.tls.mountPath }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/* The volume (a list item) of the TLS Secret, empty when tls.enabled is false. */}}
{{- define "unmask.tlsVolume" -}}
{{- if .Values.tls.enabled -}}
- name: tls
  secret:
    secretName: {{ .Values.tls.secretName }}
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      - key: ca.crt
        path: ca.crt
{{- end -}}
{{- end -}}

{{/* Tracing TLS ------------------------------------------------------------------------------- */}}

{{/* "true" when the services export spans over TLS: tracing.tls.enabled and an endpoint is passed. */}}
{{- define "unmask.otlpTls" -}}
{{- if and .Values.tracing.tls.enabled (include "unmask.otlpEndpoint" .) -}}
true
{{- end -}}
{{- end -}}

{{/* "true" when the tracing TLS Secret is mounted in the service containers. */}}
{{- define "unmask.otlpTlsMounted" -}}
{{- if and (include "unmask.otlpTls" .) .Values.tracing.tls.secretName -}}
true
{{- end -}}
{{- end -}}

{{/* The services' flags toward the collector (the list items), empty without unmask.otlpTls.
       Without a Secret: the system's roots (--otlp-tls; the other flags imply it). */}}
{{- define "unmask.otlpTlsArgs" -}}
{{- if include "unmask.otlpTls" . -}}
{{- $t := .Values.tracing.tls -}}
{{- $d := $t.mountPath -}}
{{- if $t.secretName -}}
- --otlp-tls-ca={{ $d }}/ca.crt
{{- if $t.clientCertificate }}
- --otlp-tls-cert={{ $d }}/tls.crt
- --otlp-tls-key={{ $d }}/tls.key
{{- end }}
{{- else -}}
- --otlp-tls
{{- end }}
{{- with $t.serverName }}
- --otlp-tls-server-name={{ . }}
{{- end }}
{{- if and $t.secretName (gt (int $t.refreshSeconds) 0) }}
- --otlp-tls-refresh-seconds={{ $t.refreshSeconds }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The volumeMount (a list item) of the tracing TLS Secret, empty unless unmask.otlpTlsMounted. */}}
{{- define "unmask.otlpTlsVolumeMount" -}}
{{- if include "unmask.otlpTlsMounted" . -}}
- name: otlp-tls
  mountPath: {{ .Values.tracing.tls.mountPath }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/* The volume (a list item) of the tracing TLS Secret, empty unless unmask.otlpTlsMounted. */}}
{{- define "unmask.otlpTlsVolume" -}}
{{- if include "unmask.otlpTlsMounted" . -}}
- name: otlp-tls
  secret:
    secretName: {{ .Values.tracing.tls.secretName }}
    items:
      - key: ca.crt
        path: ca.crt
      {{- if .Values.tracing.tls.clientCertificate }}
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      {{- end }}
{{- end -}}
{{- end -}}

{{/* Metrics TLS ------------------------------------------------------------------------------- */}}

{{/* A service's flags for /metrics over HTTPS (the list items), empty when metrics.tls.enabled is
       false. They need --metrics-listen, which every service gets. */}}
{{- define "unmask.metricsTlsArgs" -}}
{{- if .Values.metrics.tls.enabled -}}
{{- $t := .Values.metrics.tls -}}
{{- $d := $t.mountPath -}}
- --metrics-tls-cert={{ $d }}/tls.crt
- --metrics-tls-key={{ $d }}/tls.key
{{- if $t.requireClientCert }}
- --metrics-tls-ca={{ $d }}/ca.crt
- --metrics-tls-require-client-cert
{{- end }}
{{- if gt (int $t.refreshSeconds) 0 }}
- --metrics-tls-refresh-seconds={{ int $t.refreshSeconds }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The volumeMount (a list item) of the metrics TLS Secret, empty when metrics.tls.enabled is false. */}}
{{- define "unmask.metricsTlsVolumeMount" -}}
{{- if .Values.metrics.tls.enabled -}}
- name: metrics-tls
  mountPath: {{ .Values.metrics.tls.mountPath }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/* The volume (a list item) of the metrics TLS Secret, empty when metrics.tls.enabled is false;
       ca.crt only with requireClientCert (the services read it to check scrapers). */}}
{{- define "unmask.metricsTlsVolume" -}}
{{- if .Values.metrics.tls.enabled -}}
- name: metrics-tls
  secret:
    secretName: {{ .Values.metrics.tls.secretName }}
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      {{- if .Values.metrics.tls.requireClientCert }}
      - key: ca.crt
        path: ca.crt
      {{- end }}
{{- end -}}
{{- end -}}

{{/* The scheme and tlsConfig of a ServiceMonitor endpoint (prometheus-operator's SafeTLSConfig,
       read from the Secret in the release namespace), empty when metrics.tls.enabled is false.
       The certificate is always verified: no insecureSkipVerify. */}}
{{- define "unmask.metricsTlsEndpoint" -}}
{{- if .Values.metrics.tls.enabled -}}
{{- $t := .Values.metrics.tls -}}
scheme: https
tlsConfig:
  ca:
    secret:
      name: {{ $t.secretName }}
      key: ca.crt
  {{- with $t.serverName }}
  serverName: {{ . }}
  {{- end }}
  {{- if $t.requireClientCert }}
  cert:
    secret:
      name: {{ $t.secretName }}
      key: tls.crt
  keySecret:
    name: {{ $t.secretName }}
    key: tls.key
  {{- end }}
{{- end -}}
{{- end -}}

{{/* Redis TLS --------------------------------------------------------------------------------- */}}

{{/* "true" when the scheduler reaches the external Redis over TLS (redis.external.tls.enabled with
       redis.mode=external; unmask.validate refuses it with any other mode). */}}
{{- define "unmask.redisTls" -}}
{{- if and .Values.redis.external.tls.enabled (eq .Values.redis.mode "external") -}}
true
{{- end -}}
{{- end -}}

{{/* "true" when the Redis TLS Secret is mounted in the scheduler container: it holds the CA
       (caCertificate) or the client certificate (clientCertificate). */}}
{{- define "unmask.redisTlsMounted" -}}
{{- $t := .Values.redis.external.tls -}}
{{- if and (include "unmask.redisTls" .) $t.secretName (or $t.caCertificate $t.clientCertificate) -}}
true
{{- end -}}
{{- end -}}

{{/* The scheduler's flags toward Redis (the list items), empty without unmask.redisTls. Without
       caCertificate: the system's roots. Never --redis-tls-refresh-seconds (it must stay 0: the
       scheduler reads the files at each new connection), whatever tls.refreshSeconds says. */}}
{{- define "unmask.redisTlsArgs" -}}
{{- if include "unmask.redisTls" . -}}
{{- $t := .Values.redis.external.tls -}}
{{- $d := $t.mountPath -}}
- --redis-tls
{{- if and $t.secretName $t.caCertificate }}
- --redis-tls-ca={{ $d }}/ca.crt
{{- end }}
{{- if and $t.secretName $t.clientCertificate }}
- --redis-tls-cert={{ $d }}/tls.crt
- --redis-tls-key={{ $d }}/tls.key
{{- end }}
{{- with $t.serverName }}
- --redis-tls-server-name={{ . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The volumeMount (a list item) of the Redis TLS Secret, empty unless unmask.redisTlsMounted. */}}
{{- define "unmask.redisTlsVolumeMount" -}}
{{- if include "unmask.redisTlsMounted" . -}}
- name: redis-tls
  mountPath: {{ .Values.redis.external.tls.mountPath }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/* The volume (a list item) of the Redis TLS Secret, empty unless unmask.redisTlsMounted; ca.crt
       only with caCertificate, tls.crt and tls.key only with clientCertificate. */}}
{{- define "unmask.redisTlsVolume" -}}
{{- if include "unmask.redisTlsMounted" . -}}
{{- $t := .Values.redis.external.tls -}}
- name: redis-tls
  secret:
    secretName: {{ $t.secretName }}
    items:
      {{- if $t.caCertificate }}
      - key: ca.crt
        path: ca.crt
      {{- end }}
      {{- if $t.clientCertificate }}
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      {{- end }}
{{- end -}}
{{- end -}}

{{/* The settings every service reads from the ConfigMap (expanded in args as $(NAME)). */}}
{{- define "unmask.commonArgs" -}}
- --otlp-endpoint=$(UNMASK_OTLP_ENDPOINT)
{{- with include "unmask.otlpTlsArgs" . }}
{{ . }}
{{- end }}
- --trace-sample-ratio=$(UNMASK_TRACE_SAMPLE_RATIO)
- --trace-queue-spans=$(UNMASK_TRACE_QUEUE_SPANS)
- --trace-batch-spans=$(UNMASK_TRACE_BATCH_SPANS)
- --trace-flush-interval-ms=$(UNMASK_TRACE_FLUSH_INTERVAL_MS)
- --drain-timeout-seconds=$(UNMASK_DRAIN_TIMEOUT_SECONDS)
{{- end -}}

{{/* Checks --------------------------------------------------------------------------------- */}}

{{/* Cross-field rules the schema cannot state; fails with the chart's own message. */}}
{{- define "unmask.validate" -}}
{{- $grace := .Values.terminationGracePeriodSeconds | int -}}
{{- $drain := .Values.drainTimeoutSeconds | int -}}
{{- if le $grace $drain -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be greater than drainTimeoutSeconds (%d): Kubernetes would kill the services before they finish draining" $grace $drain) -}}
{{- end -}}
{{- if and (gt (int .Values.scheduler.replicas) 1) (eq .Values.redis.mode "none") -}}
{{- fail (printf "scheduler.replicas=%d needs a shared queue: set redis.mode to bundled or external (redis.mode=none keeps jobs inside one scheduler process)" (int .Values.scheduler.replicas)) -}}
{{- end -}}
{{- $_ := include "unmask.redisAddress" . -}}
{{- $_ = include "unmask.executorModel" . -}}
{{- if eq .Values.models.source "existingClaim" -}}
{{- $_ = required "models.existingClaim is required when models.source=existingClaim (name of the PersistentVolumeClaim holding the checkpoints)" .Values.models.existingClaim -}}
{{- else if eq .Values.models.source "hostPath" -}}
{{- $_ = required "models.hostPath.path is required when models.source=hostPath (directory on the node holding the checkpoints)" .Values.models.hostPath.path -}}
{{- end -}}
{{- if .Values.tls.enabled -}}
{{- $_ = required "tls.secretName is required when tls.enabled (a Secret with tls.crt, tls.key and ca.crt, e.g. from cert-manager)" .Values.tls.secretName -}}
{{- end -}}
{{- if .Values.metrics.tls.enabled -}}
{{- $_ = required "metrics.tls.secretName is required when metrics.tls.enabled (a Secret with tls.crt, tls.key and ca.crt, e.g. from cert-manager)" .Values.metrics.tls.secretName -}}
{{- end -}}
{{- if .Values.tracing.tls.enabled -}}
{{- if and .Values.tracing.enabled (not .Values.tracing.otlpEndpoint) .Values.jaeger.enabled -}}
{{- fail "tracing.tls.enabled needs tracing.otlpEndpoint: the bundled Jaeger (jaeger.enabled) receives OTLP in plaintext; set tracing.otlpEndpoint to a collector that serves TLS, or tracing.tls.enabled=false" -}}
{{- end -}}
{{- if and .Values.tracing.tls.clientCertificate (not .Values.tracing.tls.secretName) -}}
{{- fail "tracing.tls.secretName is required with tracing.tls.clientCertificate (a Secret with ca.crt, tls.crt and tls.key)" -}}
{{- end -}}
{{- end -}}
{{- $rt := .Values.redis.external.tls -}}
{{- if $rt.enabled -}}
{{- if ne .Values.redis.mode "external" -}}
{{- fail (printf "redis.external.tls.enabled needs redis.mode=external (redis.mode is %s): the bundled Redis speaks plaintext and redis.mode=none has no Redis connection; set redis.mode=external and redis.external.address to a Redis that serves TLS, or redis.external.tls.enabled=false" .Values.redis.mode) -}}
{{- end -}}
{{- if not $rt.secretName -}}
{{- if $rt.clientCertificate -}}
{{- fail "redis.external.tls.secretName is required with redis.external.tls.clientCertificate (a Secret with tls.crt and tls.key, and ca.crt with caCertificate)" -}}
{{- else if $rt.caCertificate -}}
{{- fail "redis.external.tls.secretName is required when redis.external.tls.enabled (a Secret with ca.crt, the CA Redis's certificate must chain to); to check Redis against the system's roots instead, set redis.external.tls.caCertificate=false" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.scheduler.apiKeys.enabled .Values.scheduler.apiKeys.existingSecret -}}
{{- $_ = required "scheduler.apiKeys.secretKey is required with scheduler.apiKeys.existingSecret" .Values.scheduler.apiKeys.secretKey -}}
{{- end -}}
{{- /* The scheduler's container ports must differ, and so must its Service's ports. */ -}}
{{- $s := .Values.scheduler -}}
{{- $pod := list (int $s.port) (int $s.metricsPort) -}}
{{- $svc := list (int $s.service.port) (int $s.metricsPort) -}}
{{- if $s.http.enabled -}}
{{- $pod = append $pod (int $s.http.port) -}}
{{- $svc = append $svc (int $s.service.httpPort) -}}
{{- end -}}
{{- if or (ne (len $pod) (len (uniq $pod))) (ne (len $svc) (len (uniq $svc))) -}}
{{- fail (printf "scheduler ports collide: the pod's ports %v (scheduler.port, scheduler.metricsPort, scheduler.http.port) must differ, and so must the Service's %v (scheduler.service.port, scheduler.metricsPort, scheduler.service.httpPort)" $pod $svc) -}}
{{- end -}}
{{- /* The loader and the executors share the pod's network namespace: their ports must differ. */ -}}
{{- $n := int .Values.worker.executorsPerGpu -}}
{{- $ports := list (int .Values.worker.loader.port) (int .Values.worker.loader.metricsPort) -}}
{{- range $i := until $n -}}
{{- $ports = append $ports (add $.Values.worker.executor.port $i | int) -}}
{{- $ports = append $ports (add $.Values.worker.executor.metricsPort $i | int) -}}
{{- end -}}
{{- if ne (len $ports) (len (uniq $ports)) -}}
{{- fail (printf "worker ports collide: the loader uses %d and %d, executor i uses worker.executor.port+i and worker.executor.metricsPort+i for i < %d; all must differ inside one pod" (int .Values.worker.loader.port) (int .Values.worker.loader.metricsPort) $n) -}}
{{- end -}}
{{- end -}}
