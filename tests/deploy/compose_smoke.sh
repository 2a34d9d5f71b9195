#!/usr/bin/env bash
# The compose stack for real: builds the CPU image (deploy/Dockerfile.cpu), starts
# deploy/compose.yaml serving models/unmask-kjv, waits until every service is healthy, then uses
# it as a user would: the CLI inside the scheduler container (gRPC), the OpenAI-compatible HTTP
# API from this machine, the metrics endpoint, and a job that outlives a restarted executor.
# It tears the stack down at the end (also on failure).
#
# Needs a Docker engine and Compose: the v2 plugin (`docker compose`) or Debian 12's
# docker-compose 1.29. Not part of CTest (the build machines have no container engine).
#
#   tests/deploy/compose_smoke.sh [--offline] [--no-build] [--keep]
#
# --offline  no container registry: make the base images from Debian's archive instead
#            (debian:12 and debian:12-slim by debootstrap, unless they exist already) and run the
#            stack with stand-ins for the two third-party images: Redis from Debian's
#            redis-server, and a container that only sleeps in Jaeger's place (spans are dropped).
#            The stand-ins are named unmask-smoke/* and used through an override file only.
# --no-build use the image as it is.
# --keep     leave the stack running.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

OFFLINE=0 BUILD=1 KEEP=0
for a in "$@"; do
  case "$a" in
    --offline) OFFLINE=1 ;;
    --no-build) BUILD=0 ;;
    --keep) KEEP=1 ;;
    *) echo "compose_smoke.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done

if docker compose version > /dev/null 2>&1; then COMPOSE=(docker compose)
elif command -v docker-compose > /dev/null; then COMPOSE=(docker-compose)
else echo "compose_smoke.sh: neither 'docker compose' nor docker-compose is installed" >&2; exit 2; fi
docker info > /dev/null 2>&1 || { echo "compose_smoke.sh: no Docker engine answers (docker info)" >&2; exit 2; }

IMAGE=unmask/unmask-cpu:0.1.0
WORK=$(mktemp -d)
PROJECT=unmask-smoke
HTTP_PORT=${SMOKE_HTTP_PORT:-18000}
log() { echo "== $(date +%T) $*"; }

# Base images from Debian's archive (debootstrap's minbase, the same packages apt then adds).
debian_base() {
  if docker image inspect debian:12 > /dev/null 2>&1 && docker image inspect debian:12-slim > /dev/null 2>&1; then
    return
  fi
  command -v debootstrap > /dev/null || { echo "--offline needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
  log "debootstrap bookworm (base image)"
  local rootfs="$WORK/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian > "$WORK/debootstrap.log"
  printf '%s\n' "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" > "$rootfs/etc/apt/sources.list"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' - debian:12 > /dev/null
  docker tag debian:12 debian:12-slim
}

stand_ins() {
  log "stand-in images (Redis from Debian, a sleeper for Jaeger)"
  mkdir -p "$WORK/redis" "$WORK/sink"
  # Like the official image's entrypoint: without a config file Redis 7 refuses non-loopback
  # clients (protected mode), so the official image adds --protected-mode no; this one too.
  cat > "$WORK/redis/entrypoint.sh" <<'EOF'
#!/bin/sh
if [ "$1" = redis-server ]; then shift; set -- redis-server "$@" --protected-mode no; fi
exec "$@"
EOF
  chmod 755 "$WORK/redis/entrypoint.sh"
  cat > "$WORK/redis/Dockerfile" <<'EOF'
FROM debian:12
RUN apt-get update -q && apt-get install -y -q --no-install-recommends redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/*
COPY entrypoint.sh /usr/local/bin/entrypoint.sh
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
CMD ["redis-server"]
EOF
  # PID 1 ignores SIGTERM unless it handles it: this one exits on it, as Jaeger does.
  printf '%s\n' 'FROM debian:12' 'CMD ["sh", "-c", "trap \"exit 0\" TERM; sleep infinity & wait"]' > "$WORK/sink/Dockerfile"
  docker build -q -t unmask-smoke/redis:7 "$WORK/redis" > /dev/null
  docker build -q -t unmask-smoke/jaeger-sink "$WORK/sink" > /dev/null
  cat > "$WORK/compose.offline.yaml" <<'EOF'
services:
  redis:
    image: unmask-smoke/redis:7
  jaeger:
    image: unmask-smoke/jaeger-sink
EOF
}

cat > "$WORK/env" <<EOF
UNMASK_MODELS_DIR=$ROOT/models
UNMASK_MODEL=unmask-kjv
UNMASK_PRECISION=bf16
UNMASK_SHM_SIZE=1gb
UNMASK_HTTP_PORT=$HTTP_PORT
UNMASK_API_KEYS_FILE=./api-keys.dev
UNMASK_API_KEY_FILE=./api-key.dev
UNMASK_IMAGE=$IMAGE
EOF
# The executor under a memory limit, as in a Kubernetes pod: its job budget must come from it.
cat > "$WORK/compose.smoke.yaml" <<'EOF'
services:
  executor:
    mem_limit: 3g
EOF
FILES=(-f deploy/compose.yaml -f "$WORK/compose.smoke.yaml")
if [[ $OFFLINE == 1 ]]; then
  debian_base
  stand_ins
  FILES+=(-f "$WORK/compose.offline.yaml")
fi
dc() { "${COMPOSE[@]}" -p "$PROJECT" --env-file "$WORK/env" "${FILES[@]}" "$@"; }

cleanup() {
  local rc=$?
  if [[ $rc != 0 ]]; then
    echo "-- compose ps and the last logs:"; dc ps || true; dc logs --tail 40 || true
  fi
  if [[ $KEEP == 0 ]]; then dc down -v --timeout 50 > /dev/null 2>&1 || true; fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT

if [[ $BUILD == 1 ]]; then
  log "docker build -f deploy/Dockerfile.cpu -t $IMAGE ."
  DOCKER_BUILDKIT=1 docker build -f deploy/Dockerfile.cpu -t "$IMAGE" . > "$WORK/build.log" 2>&1 \
    || { tail -40 "$WORK/build.log"; exit 1; }
fi
docker image inspect "$IMAGE" --format 'image {{.Id}} {{.Size}} bytes' | sed 's/^/   /'

log "compose up"
dc up -d --no-build

wait_healthy() {
  local svc=$1 limit=$2 id status
  id=$(dc ps -q "$svc")
  for ((i = 0; i < limit; i++)); do
    status=$(docker inspect -f '{{.State.Health.Status}}' "$id")
    [[ $status == healthy ]] && { log "$svc healthy after ${i}s"; return; }
    [[ $(docker inspect -f '{{.State.Running}}' "$id") == true ]] || { echo "$svc exited" >&2; return 1; }
    sleep 1
  done
  echo "$svc not healthy after ${limit}s ($status)" >&2
  return 1
}
wait_healthy loader 300
wait_healthy executor 300
wait_healthy scheduler 300

fail() { echo "FAIL: $*" >&2; exit 1; }

log "the executor's threading model and compute type (its start-up log)"
dc logs executor > "$WORK/executor.log" 2>&1
grep -E 'compute set-up|msg=computing|msg="job budget"' "$WORK/executor.log" | sed 's/^/   /'
grep -q "OpenBLAS (OpenMP)" "$WORK/executor.log" || fail "the image's executor does not run OpenBLAS's OpenMP build"
# The jobs' heap budget is the container's memory, not what the weights left of its /dev/shm.
budget=$(sed -n 's/.*msg="job budget" bytes=\([0-9]*\).*/\1/p' "$WORK/executor.log" | tail -n 1)
[[ -n $budget && $budget -gt 0 && $budget -lt $((2 << 30)) ]] \
  || fail "the executor's job budget ($budget bytes) is not within its 3 GiB limit less the 1 GiB reserve"
grep -q 'msg="job budget".*cgroup' "$WORK/executor.log" || fail "the job budget does not name the cgroup limit"

cli() { dc exec -T scheduler unmask --scheduler=127.0.0.1:50051 --api-key-file=/run/secrets/api-key "$@"; }

log "generate through the CLI in the scheduler container (gRPC)"
out=$(cli generate --model unmask-kjv --prompt "In the beginning God" --gen-length 16 --json)
echo "$out" | python3 -c '
import json, sys
events = [json.loads(l) for l in sys.stdin.read().splitlines() if l.startswith("{")]
done = [e["completed"] for e in events if "completed" in e]
assert done and done[-1].get("text", "").strip(), "no completed event with text in %r" % events[-3:]
assert any("step" in e for e in events), "no step was streamed"
print("   %d events, text: %r" % (len(events), done[-1]["text"]))
' || fail "the CLI's generation"

log "the OpenAI-compatible HTTP API from this machine (port $HTTP_PORT)"
key=$(cat deploy/api-key.dev)
body='{"model":"unmask-kjv","prompt":"And the LORD said","max_tokens":16}'
resp=$(curl -sS --fail-with-body -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d "$body" "http://127.0.0.1:$HTTP_PORT/v1/completions") || fail "POST /v1/completions: $resp"
echo "$resp" | python3 -c 'import json,sys; r=json.load(sys.stdin); t=r["choices"][0]["text"]; assert t.strip(), r; print("   text:", repr(t))' \
  || fail "the HTTP completion: $resp"
code=$(curl -s -o /dev/null -w '%{http_code}' -d "$body" "http://127.0.0.1:$HTTP_PORT/v1/completions")
[[ $code == 401 ]] || fail "a request without the key got $code, not 401"

log "chat through the checkpoint's template"
chat='{"model":"unmask-kjv","messages":[{"role":"user","content":"Who made the heaven?"}],"max_tokens":16}'
resp=$(curl -sS --fail-with-body -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d "$chat" "http://127.0.0.1:$HTTP_PORT/v1/chat/completions") || fail "POST /v1/chat/completions: $resp"
echo "$resp" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("   content:", repr(r["choices"][0]["message"]["content"]))' \
  || fail "the chat completion: $resp"

log "metrics"
curl -sf http://127.0.0.1:9091/metrics | grep -q '^unmask_' || fail "no unmask_ metrics on :9091"

log "a job submitted as the executor restarts completes (drained, or kept in Redis and dispatched again)"
job=$(cli submit --model unmask-kjv --prompt "Blessed are" --gen-length 64 --steps 64 | tail -n 1) \
  || fail "submit"
dc restart executor > /dev/null
wait_healthy executor 300
status=$(cli watch "$job" --json | tail -n 1)
echo "$status" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); assert r["completed"]["text"].strip(), r' \
  || fail "job $job after the executor's restart: $status"

log "the stack stops on SIGTERM within its grace period"
start=$(date +%s)
dc stop --timeout 50 > /dev/null
log "stopped in $(( $(date +%s) - start ))s"
for svc in loader executor scheduler; do
  code=$(docker inspect -f '{{.State.ExitCode}}' "$(dc ps -q "$svc")")
  echo "   $svc exited with $code"
  [[ $code == 0 ]] || fail "$svc exited with $code on SIGTERM (137: killed at the end of the grace period)"
done
echo "compose_smoke: PASS"
