#!/usr/bin/env bash
# The CUDA stack for the CUDA-build rehearsal: ci/rehearsal/cuda-stack.txt installed as root
# with pip into the system Python of the runtime-like image (ci/rehearsal/build-image.sh), as
# Dynamo's Dockerfile installs its stack (--break-system-packages). What pip writes under
# /usr/local is kept in a host folder keyed by the inputs (CACHE/cuda-usr-local-KEY) and
# mounted read-only over the image's /usr/local by the rehearsal: one image, the stack beside
# it, no second multi-GB image layer. No pip cache is kept. Prints the folder. Root only.
#
#   ci/rehearsal/cuda-stack.sh CACHE
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${1:?usage: ci/rehearsal/cuda-stack.sh CACHE}"
source "$HERE/../podman-docker-api.sh" conf
set +u
image=$("$HERE/build-image.sh")
KEY=$( { cat "$0" "$HERE"/cuda-stack.txt "$HERE"/cuda_requirements.py; echo "$image"; } | sha256sum | cut -c1-12)
target="$CACHE/cuda-usr-local-$KEY"
if [ -f "$target/.complete" ]; then echo "$target"; exit 0; fi
rm -rf "$target" && mkdir -p "$target"
started=$(date +%s)
certs=()
bundle=/etc/ssl/certs/ca-certificates.crt
[ -f "$bundle" ] && certs=(-v "$bundle:/host-ca.crt:ro" -e "PIP_CERT=/host-ca.crt")
podman run --rm --user 0:0 "${certs[@]}" -v "$target:/usr/local" \
  -v "$HERE:/stack:ro" -e PIP_NO_CACHE_DIR=1 -e PIP_DISABLE_PIP_VERSION_CHECK=1 \
  -e PIP_ROOT_USER_ACTION=ignore -e PIP_BREAK_SYSTEM_PACKAGES=1 "$image" bash -c '
    set -e
    mkdir -p /tmp/meta
    python3 /stack/cuda_requirements.py /stack/cuda-stack.txt /tmp/meta >/tmp/requirements.txt
    echo "cuda stack: $(wc -l </tmp/requirements.txt) requirements"
    grep -v "^#" /stack/cuda-stack.txt >/tmp/top.txt
    sed "s/\[[^]]*\]//" /tmp/top.txt >/tmp/pins.txt
    python3 -m pip install --no-warn-script-location --no-deps -r /tmp/top.txt
    python3 -m pip install --no-warn-script-location -r /tmp/requirements.txt -c /tmp/pins.txt
  ' >&2
touch "$target/.complete"
echo "cuda stack: $(du -sh "$target" | cut -f1) in $(( $(date +%s) - started )) s" >&2
echo "$target"
