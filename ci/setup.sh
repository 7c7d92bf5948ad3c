#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine for the CPU tier: etcd + NATS from the distribution
# (through sudo when not root), the project venv with ai-dynamo 1.6.1 / sglang 0.5.21 on a CPU
# torch. Idempotent: a second run checks a stamp per step and changes nothing.
# HARNESS_TORCH_INDEX: an index holding the CPU build of torch (e.g. the PyTorch CPU index on
# a stock CI runner); by default pip takes it from the machine's own wheels.
#
# `ci/setup.sh --dynamo VERSION` builds instead the environment of an older Dynamo release
# (ci/requirements/releases/VERSION/) in .venvs/dynamo-VERSION: that release's ai-dynamo and
# sglang on the same CPU torch, for `pytest --dynamo-env` and `python -m discovery_harness history`.
# The harness itself keeps running from .venv.
#
# `ci/setup.sh --sglang VERSION` rehearses a pin bump: the pinned Dynamo over sglang VERSION in
# .venvs/sglang-VERSION (the runtime set as pinned, sglang VERSION without its CUDA
# dependencies), then whatever that sglang newly imports on the workers' start path, resolved
# from its own declared requirements (harness/runtime/pin_bump.py; needs the harness's .venv).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQ="$ROOT/ci/requirements"
RELEASE=""
SGLANG=""
if [ "${1:-}" = "--dynamo" ]; then
  RELEASE="${2:?usage: ci/setup.sh [--dynamo VERSION]}"
  [ -d "$REQ/releases/$RELEASE" ] || {
    known=$(cd "$REQ/releases" && ls -d */ | tr -d / | tr '\n' ' ')
    echo "no requirements for Dynamo $RELEASE; known: $known" >&2
    exit 2
  }
  VENV="${HARNESS_VENV:-$ROOT/.venvs/dynamo-$RELEASE}"
elif [ "${1:-}" = "--sglang" ]; then
  SGLANG="${2:?usage: ci/setup.sh [--sglang VERSION]}"
  [ -x "$ROOT/.venv/bin/python" ] || { echo "--sglang needs the harness's .venv: run bash ci/setup.sh first" >&2; exit 2; }
  VENV="${HARNESS_VENV:-$ROOT/.venvs/sglang-$SGLANG}"
else
  VENV="${HARNESS_VENV:-$ROOT/.venv}"
fi
PY="${PYTHON:-python3}"
log() { printf '[setup %(%H:%M:%S)T] %s\n' -1 "$*"; }

need_apt=()
command -v etcd >/dev/null || need_apt+=(etcd-server)
command -v nats-server >/dev/null || need_apt+=(nats-server)
if ((${#need_apt[@]})); then
  log "apt: ${need_apt[*]}"
  as_root=(); [ "$(id -u)" -eq 0 ] || as_root=(sudo -n)
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  # The packages start their services; the harness runs its own private instances.
  for svc in etcd nats-server; do
    "${as_root[@]}" systemctl disable --now "$svc" >/dev/null 2>&1 ||
      "${as_root[@]}" service "$svc" stop >/dev/null 2>&1 || true
  done
fi

[ -x "$VENV/bin/python" ] || { log "venv: $VENV"; "$PY" -m venv "$VENV"; }
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
# This machine's pip config lists local indexes that may be absent; keep their noise out.
exec 2> >(grep -v -e "is ignored: it is neither" -e "which is not installed" \
  -e "dependency resolver does not currently" >&2)

# Each step is stamped with the hash of its inputs, so a rerun with unchanged files is a no-op.
stamp_dir="$VENV/.harness-stamps"; mkdir -p "$stamp_dir"
step() {  # step NAME INPUT_FILE... -- COMMAND...
  local name=$1; shift; local inputs=()
  while [ "$1" != "--" ]; do inputs+=("$1"); shift; done; shift
  local sum; sum=$(cat "${inputs[@]}" | sha256sum | cut -c1-16)
  if [ "$(cat "$stamp_dir/$name" 2>/dev/null)" = "$sum" ]; then return 0; fi
  log "$name"; "$@"; echo "$sum" >"$stamp_dir/$name"
}

check_cpu_torch() {
  "$VENV/bin/python" - <<'PY'
import torch
assert "+cpu" in torch.__version__ or not torch.version.cuda, f"CUDA torch crept in: {torch.__version__}"
PY
}

# torch first and alone: pip takes the CPU wheel from local disk; later steps then see
# torch==2.13.0 satisfied and never resolve a CUDA build.
TORCH_FROM=(); [ -z "${HARNESS_TORCH_INDEX:-}" ] || TORCH_FROM=(--index-url "$HARNESS_TORCH_INDEX")
step torch "$REQ/torch.txt" -- "${PIP[@]}" "${TORCH_FROM[@]}" -r "$REQ/torch.txt"
if [ -n "$RELEASE" ]; then
  REL="$REQ/releases/$RELEASE"
  # A release's files include the shared ones (releases/*.txt): those are part of its stamp.
  SHARED=("$REQ"/releases/*.txt)
  step runtime "$REQ/torch.txt" "${SHARED[@]}" "$REL/runtime.txt" -- \
    "${PIP[@]}" -r "$REL/runtime.txt" -c "$REQ/torch.txt"
  step nodeps "${SHARED[@]}" "$REL/nodeps.txt" -- "${PIP[@]}" --no-deps -r "$REL/nodeps.txt"
  check_cpu_torch
  log "ready: $VENV ($(du -sh "$VENV" | cut -f1)); run with --dynamo-env $VENV"
  exit 0
fi
if [ -n "$SGLANG" ]; then
  NODEPS="$VENV/.harness-nodeps.txt"  # the pinned no-deps set, sglang bumped
  sed "s/^sglang==.*/sglang==$SGLANG/" "$REQ/dynamo-nodeps.txt" >"$NODEPS"
  step runtime "$REQ/torch.txt" "$REQ/dynamo-runtime.txt" -- \
    "${PIP[@]}" -r "$REQ/dynamo-runtime.txt" -c "$REQ/torch.txt"
  step nodeps "$NODEPS" -- "${PIP[@]}" --no-deps -r "$NODEPS"
  step imports "$NODEPS" "$ROOT/harness/runtime/pin_bump.py" -- \
    "$ROOT/.venv/bin/python" -m discovery_harness.runtime.pin_bump "$VENV" "$REQ/torch.txt"
  check_cpu_torch
  log "ready: $VENV ($(du -sh "$VENV" | cut -f1)); run with --dynamo-env $VENV"
  exit 0
fi
step runtime "$REQ/torch.txt" "$REQ/dynamo-runtime.txt" -- \
  "${PIP[@]}" -r "$REQ/dynamo-runtime.txt" -c "$REQ/torch.txt"
step nodeps "$REQ/dynamo-nodeps.txt" -- "${PIP[@]}" --no-deps -r "$REQ/dynamo-nodeps.txt"
step harness "$REQ/harness.txt" "$ROOT/pyproject.toml" "$ROOT/setup.py" -- bash -c \
  "${PIP[*]} -r '$REQ/harness.txt' -c '$REQ/torch.txt' && ${PIP[*]} --no-deps -e '$ROOT'"

check_cpu_torch
log "ready: $VENV ($(du -sh "$VENV" | cut -f1))"
