#!/usr/bin/env bash
# Setup for tests/test_compose_engine.py: a real Docker engine and the images compose runs.
#   dockerd     Debian's docker.io (Engine 20.10 on bookworm: the oldest engine we support),
#               started as root without iptables and NAT (--iptables=false --ip-masq=false):
#               containers reach each other and the host's loopback ports, nothing outside
#   stand-ins   tests/compose-engine/build-standins: the images no registry here serves, built
#               under .env's pinned names from what the local stack builds (cached in the engine)
#   k6 image    built from k6/Dockerfile itself (.env's K6_IMAGE), on the host network so its
#               build stage reaches the Go module proxy (the engine has no NAT)
# Idempotent: a running engine, cached stand-ins and Docker's layer cache make a warm run fast.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
cd "$ROOT"

if ! command -v dockerd >/dev/null; then
  log "installing Debian package docker.io (the Docker engine for the compose engine test)"
  apt_install docker.io
fi
DOCKER=/usr/bin/docker   # Debian's client, the same release as the engine
[ -x "$DOCKER" ] || DOCKER=docker
if ! "$DOCKER" info >/dev/null 2>&1; then
  mkdir -p "$STATE/logs"
  log "starting dockerd (log: $STATE/logs/dockerd.log)"
  # at this script's priority (scripts/test runs it at nice 19): the images below are built in the
  # engine, beside the builds and the serial tests, which go first; back to the default priority
  # once they are built (below)
  setsid dockerd --iptables=false --ip-masq=false >"$STATE/logs/dockerd.log" 2>&1 < /dev/null &
  pid=$!
  for _ in $(seq 60); do "$DOCKER" info >/dev/null 2>&1 && break; sleep 1; done
  "$DOCKER" info >/dev/null 2>&1 || die "dockerd did not start (see $STATE/logs/dockerd.log)"
  if [ "$(nice)" -gt 0 ]; then mkdir -p "$STATE/run"; echo "$pid" > "$STATE/run/dockerd-niced.pid"; fi
fi
log "Docker engine $("$DOCKER" version -f '{{.Server.Version}}'), compose $(docker compose version --short 2>/dev/null || echo missing)"

# First the k6 image's two stand-ins, which need none of scripts/build's binaries (scripts/test
# runs this step beside the builds), then the k6 image (later, beside the serial tests: the engine
# builds it at its own priority, which the stack's builds would share) and the stand-ins made of
# those binaries.
tests/compose-engine/build-standins --base
base_step_only && exit 0
set -a; . "$ROOT/.env"; set +a
log "building $K6_IMAGE from k6/Dockerfile"
DOCKER_BUILDKIT=1 "$DOCKER" build -q --network host --build-arg "GO_IMAGE=$GO_IMAGE" --build-arg "K6_BASE_IMAGE=$K6_BASE_IMAGE" \
  -t "$K6_IMAGE" k6 >/dev/null
scripts/build prometheus loki tidb compose
tests/compose-engine/build-standins
log "compose engine test: stand-in images (no registry here): $(tests/compose-engine/build-standins --list | tr '\n' ' ')"
log "compose engine test: services that cannot run here (no image to be had): $(
  sed -n 's/^  \([a-z0-9-]*\): {profiles: \[not-on-this-machine\]}$/\1/p' tests/compose-engine/compose.override.yaml | tr '\n' ' ')"
# The engine this script started at a low priority runs the compose engine test's containers
# later, beside other tests, at the default one: dockerd and containerd (its child, which starts
# each container) back to nice 0
if [ -s "$STATE/run/dockerd-niced.pid" ]; then
  pid=$(cat "$STATE/run/dockerd-niced.pid")
  if [ "$(ps -o comm= -p "$pid")" = dockerd ]; then
    # shellcheck disable=SC2046 # one pid a word
    renice -n 0 -p "$pid" $(pgrep -P "$pid") >/dev/null
    log "Docker engine (pid $pid) and its children back to the default priority"
  fi
  rm -f "$STATE/run/dockerd-niced.pid"
fi
