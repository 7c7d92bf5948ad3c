#!/usr/bin/env bash
# The GPU job, one script: what the GPU workflow runs and what a person runs on a GPU box; with
# TIER=cpu the CPU tier's job in the same image without a GPU (ci/dynamo-cpu-job.sh).
#
#   ci/gpu-job.sh docker      # on the runner: checks the image, runs `all` inside it as Dynamo's
#                             # docs run the image (GPUs the runner assigned, memlock, ptrace)
#   ci/gpu-job.sh all         # inside Dynamo's sglang runtime image: the steps below in order
#   ci/gpu-job.sh harness|preflight|install|fetch|plan|run|collect
#
# Inside, it runs as whatever user the image has (Dynamo's: `dynamo`, UID 1000) with the
# checkout read-only: a wheel of the harness is built from a copy of the checkout's package
# folders and installed, with the harness's own libraries, into a venv under /tmp that sees
# the image's system packages (ai-dynamo, sglang, torch are never installed, upgraded or
# shadowed: pip is constrained to the image's versions of them and of all they need); every
# command runs from $WORK, outside the checkout, and every output goes under /tmp or $REPORTS.
#
# Settings (environment): TIER (gpu, the default, or cpu), GPUS (default: every visible GPU;
# 0 on the CPU tier), MARKS (default "e2e and gpu_$GPUS and not nightly"; CPU tier
# "pre_merge and gpu_0"), REPORTS (default $WORK/reports), WORK (default
# /tmp/harness-gpu-job), HF_HOME (the model cache; must be writable for fetch), HF_TOKEN,
# ETCD_ENDPOINTS + NATS_SERVER (else the image's etcd and nats-server binaries are started),
# HARNESS_IMAGE (the image asked for; preflight compares its tag with ai-dynamo's version).
# Docker mode also: IMAGE, HF_CACHE (host folder), GPU_DEVICES (default: the runner's
# CUDA_VISIBLE_DEVICES, else all).
# REHEARSAL=1: no GPU on purpose (the container rehearsal): preflight reports the missing GPU
# without failing, fetch only lists; the run still asks for the GPU tier and must fail.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-/tmp/harness-gpu-job}"
REPORTS="${REPORTS:-$WORK/reports}"
VENV="${HARNESS_VENV:-$WORK/venv}"
PY="${PYTHON:-python3}"
REHEARSAL="${REHEARSAL:-0}"
TIER="${TIER:-gpu}"
log() { printf '[gpu-job %(%H:%M:%S)T] %s\n' -1 "$*"; }
die() { log "FAILED: $*"; exit 1; }

# As given (docker mode passes only these on: the container counts the GPUs it was given).
GPUS_GIVEN="${GPUS:-}" MARKS_GIVEN="${MARKS:-}"
gpu_count() {
  if [ -n "${GPUS:-}" ]; then echo "$GPUS"; return; fi
  local n
  n=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | grep -c . || true)
  echo "${n:-0}"
}
case "$TIER" in
  gpu) GPUS="$(gpu_count)"; MARKS="${MARKS:-e2e and gpu_$GPUS and not nightly}" ;;
  cpu) GPUS=0; MARKS="${MARKS:-pre_merge and gpu_0}" ;;
  *) echo "TIER=$TIER: gpu or cpu" >&2; exit 2 ;;
esac
if [ -n "${ETCD_ENDPOINTS:-}" ] && [ -n "${NATS_SERVER:-}" ]; then INFRA=external; else INFRA=process; fi
HARNESS=("$VENV/bin/python" -m discovery_harness)

harness() {
  log "harness: a wheel of the checkout, into $VENV (system site packages visible)"
  mkdir -p "$WORK" || die "cannot create $WORK"
  "$PY" -m venv --system-site-packages --without-pip --clear "$VENV" || die "python3 -m venv"
  # The build writes beside its sources (build/, *.egg-info): a copy of what the wheel holds.
  rm -rf "$WORK/src" "$WORK/dist" && mkdir -p "$WORK/src"
  (cd "$ROOT" && tar --exclude=__pycache__ -cf - pyproject.toml setup.py README.md harness \
    workers scenarios ci/__init__.py ci/setup.sh ci/requirements) | tar -C "$WORK/src" -xf - ||
    die "copying the checkout's package folders"
  "$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/dist" "$WORK/src" ||
    die "building the harness's wheel"
  "$PY" -m pip --python "$VENV/bin/python" install -q --disable-pip-version-check --no-deps \
    "$WORK"/dist/*.whl || die "installing the harness's wheel"
}

preflight() {
  log "preflight (image, driver, GPUs, versions, etcd/NATS, writable places)"
  mkdir -p "$WORK" "$REPORTS" || die "cannot create $WORK / $REPORTS"
  [ -x "$VENV/bin/python" ] || (harness) || die "the harness"
  local extra=()
  if [ "$REHEARSAL" = 1 ] || [ "$TIER" = cpu ]; then extra+=(--allow-no-gpu); fi
  if [ "$INFRA" = process ]; then
    for binary in etcd nats-server; do
      command -v "$binary" >/dev/null || die "$binary is not on PATH and ETCD_ENDPOINTS/NATS_SERVER are not set"
    done
    log "etcd and NATS: the image's own ($(etcd --version | head -1); $(nats-server --version))"
  fi
  # Standard library only: it runs before the harness's libraries are installed.
  (cd "$WORK" && "$VENV/bin/python" -m discovery_harness.runtime.preflight "${extra[@]}" \
    --writable "work=$WORK" --writable "reports=$REPORTS" \
    --writable "hf-cache=${HF_HOME:-$HOME/.cache/huggingface}") || die "preflight"
}

install() {
  log "install: the harness's libraries into $VENV (system site packages visible, never replaced)"
  [ -x "$VENV/bin/python" ] || (harness) || die "the harness"
  (cd "$WORK" && "$VENV/bin/python" -m discovery_harness.runtime.image_stack constraints) \
    >"$WORK/image-stack.txt" || die "reading the image's stack"
  log "the image's stack: $(grep -E '^(ai-dynamo|sglang|torch)==' "$WORK/image-stack.txt" | tr '\n' ' ')"
  # The harness's pins yield to the image's versions of the packages the image already has.
  (cd "$WORK" && "$VENV/bin/python" -m discovery_harness.runtime.image_stack requirements \
    "$ROOT/ci/requirements/harness.txt") >"$WORK/harness-requirements.txt" ||
    die "reading ci/requirements/harness.txt"
  # pip of the image's Python, aimed at the venv (PEP 668 protects the system one, not the venv).
  "$PY" -m pip --python "$VENV/bin/python" install -q --disable-pip-version-check \
    --no-warn-script-location -r "$WORK/harness-requirements.txt" -c "$WORK/image-stack.txt" ||
    die "pip install of ci/requirements/harness.txt (constrained to the image's stack)"
  local site
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if ! (cd "$WORK" && "$VENV/bin/python" -m discovery_harness.runtime.image_stack touched \
    "$site"); then
    die "the venv shadows packages of the image's stack (listed above)"
  fi
  (cd "$WORK" && "$VENV/bin/python" -c 'import discovery_harness.plugin, pytest, etcd3') ||
    die "the harness does not import"
  log "install: ok ($(du -sh "$VENV" | cut -f1))"
}

fetch() {
  local how=()
  [ "$REHEARSAL" = 1 ] && how+=(--dry-run)
  log "fetch: the models of -m \"$MARKS\" on $GPUS GPU(s) into ${HF_HOME:-the default cache}"
  (cd "$WORK" && "${HARNESS[@]}" models fetch -m "$MARKS" --gpus "$GPUS" "${how[@]}") ||
    die "models fetch (what was fetched is kept; rerun to complete it)"
}

plan() {
  log "plan: every worker's command for $GPUS GPU(s)"
  (cd "$WORK" && "${HARNESS[@]}" plan --tier gpu --gpus "$GPUS" --json >"$REPORTS/plan-gpu$GPUS.json" &&
    "${HARNESS[@]}" plan --tier gpu --gpus "$GPUS") | tee "$REPORTS/plan-gpu$GPUS.txt" ||
    die "plan"
}

run() {
  log "run: pytest --pyargs discovery_harness_scenarios -m \"$MARKS\" --tier $TIER --infra $INFRA"
  mkdir -p "$WORK/tmp"
  # What --tier auto would take here, and why (the same GPU probe the run uses).
  (cd "$WORK" && "$VENV/bin/python" -c 'from discovery_harness.runtime import tier
print("tier auto here:", tier.choose("auto").describe())') | while read -r line; do log "$line"; done
  local offline=()
  [ "$TIER" = gpu ] && offline=(HF_HUB_OFFLINE=1)
  # The installed scenarios, from $WORK: no checkout on the path, Dynamo's own pytest plugins
  # (ai-dynamo registers some) left out as the harness's checkout leaves them out.
  (cd "$WORK" && env PYTHONDONTWRITEBYTECODE=1 "${offline[@]}" "$VENV/bin/python" -m pytest \
    --pyargs discovery_harness_scenarios -m "$MARKS" --tier "$TIER" --infra "$INFRA" \
    --progress on -rs -p no:cacheprovider -p no:sglang_tests -p no:triton_tests \
    -p no:trtllm_tests -p no:vllm_tests --basetemp="$WORK/tmp/pytest" \
    --junitxml="$REPORTS/$TIER-$GPUS.xml" --report-dir "$REPORTS")
}

collect() {
  log "collect: JUnit, plan and every worker log into $REPORTS"
  mkdir -p "$REPORTS/logs"
  if [ -d "$WORK/tmp/pytest" ]; then
    (cd "$WORK/tmp/pytest" && find . -name '*.log' -exec cp --parents {} "$REPORTS/logs/" \;)
  fi
  chmod -R a+rwX "$REPORTS" 2>/dev/null || true  # the runner's user uploads and removes them
}

docker_job() {
  : "${IMAGE:?IMAGE=registry/name:tag}"
  local devices="${GPU_DEVICES:-${CUDA_VISIBLE_DEVICES:-all}}" gpus_arg network=()
  if [ "$devices" = all ]; then gpus_arg=all; else gpus_arg="\"device=$devices\""; fi
  docker image inspect "$IMAGE" >/dev/null 2>&1 || docker pull -q "$IMAGE" ||
    die "image $IMAGE: not on this runner and cannot be pulled"
  local reports="${HOST_REPORTS:-$ROOT/reports}" cache="${HF_CACHE:-$HOME/.cache/harness-hf}"
  # The image's user (UID 1000) writes reports and the model cache; the runner's user owns them.
  mkdir -p "$reports" "$cache/hub" && chmod a+rwX "$reports" "$cache" "$cache/hub"
  # etcd, NATS, frontend and workers all run inside, on the container's own loopback; the
  # host's network only for an etcd and NATS of the runner's (ETCD_ENDPOINTS, NATS_SERVER).
  [ -n "${ETCD_ENDPOINTS:-}" ] && network=(--network host)
  log "docker: $IMAGE with GPUs $devices"
  # As Dynamo's docs run the image (NIXL/UCX need locked memory and ptrace between workers).
  docker run --rm --gpus "$gpus_arg" --ulimit memlock=-1 --cap-add SYS_PTRACE --ipc host \
    "${network[@]}" --shm-size 16g \
    -v "$ROOT:/checkout:ro" -v "$reports:/reports" -v "$cache:/hf" \
    -e REPORTS=/reports -e HF_HOME=/hf -e HF_TOKEN -e HARNESS_IMAGE="$IMAGE" \
    -e GPUS="$GPUS_GIVEN" -e MARKS="$MARKS_GIVEN" -e ETCD_ENDPOINTS -e NATS_SERVER \
    "$IMAGE" bash /checkout/ci/gpu-job.sh all
  local status=$?
  # The report's matrix on the run's page (GitHub sets the variable; elsewhere it is unset).
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$reports/report.md" ]; then
    cat "$reports/report.md" >>"$GITHUB_STEP_SUMMARY"
  fi
  return "$status"
}

all() {
  local status=0 job="GPU job"  # each step in a subshell: a failed step's `die` ends it
  if [ "$TIER" = cpu ]; then  # no models to fetch, no GPU plan
    job="CPU job"
    (harness) && (preflight) && (install) || status=$?
  else
    (harness) && (preflight) && (install) && (fetch) && (plan) || status=$?
  fi
  if [ "$status" -eq 0 ]; then (run) || status=$?; fi
  collect
  [ "$status" -eq 0 ] && log "$job passed" || log "$job FAILED (exit $status)"
  return "$status"
}

case "${1:-all}" in
  docker) docker_job ;;
  all | harness | preflight | install | fetch | plan | run | collect) "${1:-all}" ;;
  *)
    echo "usage: $0 [docker|all|harness|preflight|install|fetch|plan|run|collect]" >&2
    exit 2
    ;;
esac
