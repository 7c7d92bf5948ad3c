#!/usr/bin/env bash
# Serve the Docker API from podman on a machine with no Docker engine (CI here), with etcd and
# NATS images built locally from Debian's binaries and tagged under the upstream names, so the
# testcontainers provider runs unchanged and nothing is pulled. Root only.
#
#   source ci/podman-docker-api.sh start   # exports DOCKER_HOST, CONTAINERS_CONF, ...
#   ci/podman-docker-api.sh stop           # stops the API service by the pid it recorded
#   source ci/podman-docker-api.sh conf    # podman installed and configured, nothing started
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${PODMAN_STATE_DIR:-$ROOT/build/podman}"
ETCD_TAG="quay.io/coreos/etcd:v3.4.23"
NATS_TAG="docker.io/library/nats:2.9.10"

_install() {
  command -v podman >/dev/null && command -v runc >/dev/null && return
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null
}

_conf() {
  mkdir -p "$STATE"
  # The VM's hard limits (podman's defaults are refused), runc (crun refuses the hybrid
  # cgroup layout), cgroupfs and a file event log (no systemd).
  cat >"$STATE/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  export CONTAINERS_CONF="$STATE/containers.conf"
}

# A rootfs holding one binary and the shared libraries it loads.
_image() {  # _image TAG BINARY DEST_IN_IMAGE CHANGE...
  local tag=$1 binary=$2 dest=$3; shift 3
  podman image exists "$tag" && return
  local rootfs; rootfs=$(mktemp -d)
  install -D "$binary" "$rootfs$dest"
  ldd "$binary" | grep -o '/[^ ]*' | while read -r lib; do install -D "$lib" "$rootfs$lib"; done
  mkdir -p "$rootfs/tmp" && chmod 1777 "$rootfs/tmp"
  local changes=(); for c in "$@"; do changes+=(--change "$c"); done
  tar -C "$rootfs" -c . | podman import "${changes[@]}" - "$tag" >/dev/null 2>&1
  rm -rf "$rootfs"
}

start() {
  _install
  _conf
  _image "$ETCD_TAG" "$(command -v etcd)" /usr/local/bin/etcd \
    'EXPOSE 2379' 'EXPOSE 2380' 'CMD ["/usr/local/bin/etcd"]'
  _image "$NATS_TAG" "$(command -v nats-server)" /nats-server \
    'EXPOSE 4222' 'EXPOSE 6222' 'EXPOSE 8222' 'ENTRYPOINT ["/nats-server"]'
  local sock="$STATE/podman.sock"
  if [ ! -S "$sock" ] || ! DOCKER_HOST="unix://$sock" docker version >/dev/null 2>&1; then
    podman system service --time=0 "unix://$sock" >"$STATE/service.log" 2>&1 &
    echo $! >"$STATE/service.pid"
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
  fi
  export DOCKER_HOST="unix://$sock"
  # testcontainers: the VM has /.dockerenv (it would think it runs in a container) and
  # Ryuk's image cannot be pulled.
  export TESTCONTAINERS_CONNECTION_MODE=docker_host TESTCONTAINERS_RYUK_DISABLED=true
}

stop() {
  [ -f "$STATE/service.pid" ] || return 0
  kill "$(cat "$STATE/service.pid")" 2>/dev/null || true
  rm -f "$STATE/service.pid"
}

case "${1:-start}" in
  start) start ;;
  conf) _install; _conf ;;  # podman and its configuration only (exports CONTAINERS_CONF)
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
