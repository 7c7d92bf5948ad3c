#!/usr/bin/env bash
# Rehearse the GPU job without a GPU: ci/gpu-job.sh inside a runtime-like image, as the image's
# user (UID 1000), the checkout owned by another user (the runner's), the CPU stack held as
# the runtime image holds the GPU stack (a read-only system site-packages folder of Debian's
# externally-managed Python 3.11), etcd and nats-server from Debian in the image. It runs
# every step up to the first thing that needs a GPU; the GPU-tier run must then fail loudly.
#
#   ci/rehearsal/run.sh [--cuda] [CHECKOUT]  # default: this working tree (tracked + untracked)
#
# --cuda: the CPU job (ci/dynamo-cpu-job.sh) in the same image holding instead the CUDA stack
# of Dynamo's runtime image (ci/rehearsal/cuda-stack.sh: CUDA torch, sglang with sgl-kernel,
# flashinfer and its whole dependency set), no GPU, no driver; that job must pass.
# Root only (podman). Exit status: the job's. Images and the stack folder are cached in build/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CUDA=0
if [ "${1:-}" = "--cuda" ]; then CUDA=1; shift; fi
SOURCE="$(cd "${1:-$ROOT}" && pwd)"
CACHE="$ROOT/build/rehearsal"
RUNNER_UID=1001  # the runner's user: owns the checkout; the image's user is 1000
source "$ROOT/ci/podman-docker-api.sh" conf
set +e +u  # sourcing set -e/-u for this shell; the job's status is read below

started=$(date +%s)
image=$("$ROOT/ci/rehearsal/build-image.sh") || exit 1
if [ "$CUDA" = 1 ]; then
  stack=$("$ROOT/ci/rehearsal/cuda-stack.sh" "$CACHE") || exit 1
  held=(-v "$stack:/usr/local:ro")  # what pip wrote under the image's /usr/local
  job=(-e GITHUB_STEP_SUMMARY=/reports/step-summary.md "$image" bash -c 'echo "rehearsal: running as $(id)";
    command -v nvidia-smi >/dev/null && echo "rehearsal: nvidia-smi present" || echo "rehearsal: no nvidia-smi";
    python3 -c "import torch; print(\"rehearsal: torch\", torch.__version__, \"CUDA\", torch.version.cuda)";
    bash /checkout/ci/dynamo-cpu-job.sh all')
else
  stack=$("$ROOT/.venv/bin/python" "$ROOT/ci/rehearsal/stack.py" \
    "$("$ROOT/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    "$CACHE") || exit 1
  held=(-v "$stack:/usr/local/lib/python3.11/dist-packages:ro")
  job=(-e REHEARSAL=1 -e GPUS=1 -e HARNESS_IMAGE=nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1 \
    "$image" bash -c 'echo "rehearsal: running as $(id)"; touch /checkout/x 2>/dev/null &&
    echo "rehearsal: the checkout is writable" || echo "rehearsal: the checkout is read-only to $(id -un)";
    bash /checkout/ci/gpu-job.sh all')
fi
echo "rehearsal: image $image, stack $stack (ready in $(( $(date +%s) - started )) s)"

run_dir=$(mktemp -d "$CACHE/run-XXXXXX")
trap 'rm -rf "$run_dir"' EXIT
mkdir -p "$run_dir/checkout" "$run_dir/hf" "$run_dir/reports"
(cd "$SOURCE" && git ls-files -co --exclude-standard -z | tar --null -T - -cf - 2>/dev/null) |
  tar -C "$run_dir/checkout" -xf -
chown -R "$RUNNER_UID:$RUNNER_UID" "$run_dir/checkout" "$run_dir/hf" "$run_dir/reports"
chmod -R go-w "$run_dir/checkout"
chmod a+rwX "$run_dir/hf" "$run_dir/reports"  # as `ci/gpu-job.sh docker` prepares them

# Dynamo's docs run the image with --ulimit memlock=-1; a machine whose hard limit root cannot
# raise (this VM: 8192 KiB) refuses the container, so it is left out there and said so.
# A --ulimit drops containers.conf's default_ulimits: repeat them (ci/podman-docker-api.sh).
limits=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768 --ulimit memlock=-1)
if ! podman run --rm "${limits[@]}" "$image" true 2>/dev/null; then
  limits=("${limits[@]:0:4}")
  echo "rehearsal: --ulimit memlock=-1 refused here (hard limit $(ulimit -Hl) KiB): left out"
fi
# This machine's egress CA (PyPI is reached through a TLS proxy here): the host's bundle.
certs=()
bundle=/etc/ssl/certs/ca-certificates.crt
[ -f "$bundle" ] && certs=(-v "$bundle:$bundle:ro" -e "PIP_CERT=$bundle")
podman run --rm --user 1000:0 "${limits[@]}" "${certs[@]}" --cap-add SYS_PTRACE --ipc host \
  "${held[@]}" -v "$run_dir/checkout:/checkout" -v "$run_dir/hf:/hf" \
  -v "$run_dir/reports:/reports" -e HF_HOME=/hf -e REPORTS=/reports "${job[@]}"
status=$?
echo "rehearsal: reports: $(cd "$run_dir/reports" && find . -type f | sort | tr '\n' ' ')"
echo "rehearsal: wrote $(du -sh "$run_dir" | cut -f1) in $run_dir (the checkout's copy, reports)"
[ "$CUDA" = 1 ] && echo "rehearsal: step summary: $(grep -c . "$run_dir/reports/step-summary.md" 2>/dev/null || echo 0) lines"
echo "rehearsal: job exit $status after $(( $(date +%s) - started )) s"
exit "$status"
