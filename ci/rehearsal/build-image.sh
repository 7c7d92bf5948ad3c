#!/usr/bin/env bash
# A runtime-like image for rehearsing the GPU job without a GPU: Debian bookworm (Python 3.11,
# the ABI of the CPU stack's wheels), the system Python marked externally managed (Debian's own
# EXTERNALLY-MANAGED file), user `dynamo` UID 1000 in group 0 as in Dynamo's sglang runtime image,
# and etcd / nats-server from Debian. Built with mmdebstrap from the machine's apt mirror and
# `podman import` (no registry is reachable here); tagged with the hash of its inputs, so a
# second run on one machine finds it and builds nothing. Prints the tag. Root only.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PACKAGES="python3,python3-pip,etcd-server,nats-server,procps,ca-certificates,passwd,curl"
MIRROR="${REHEARSAL_MIRROR:-http://deb.debian.org/debian}"
KEY=$( { cat "$0"; echo "$PACKAGES $MIRROR"; } | sha256sum | cut -c1-12)
TAG="localhost/harness-gpu-rehearsal:$KEY"

if podman image exists "$TAG"; then echo "$TAG"; exit 0; fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
started=$(date +%s)
# The customize hooks run as root in the finished tree: the image's user, as Dynamo's
# Dockerfile makes it (useradd -g 0, UID 1000, home and /workspace owned by it).
mmdebstrap --quiet --variant=apt --include="$PACKAGES" \
  --customize-hook='chroot "$1" useradd -m -u 1000 -g 0 -s /bin/bash dynamo' \
  --customize-hook='mkdir -p "$1/workspace" && chown 1000:0 "$1/workspace"' \
  --customize-hook='test -f "$1"/usr/lib/python3.11/EXTERNALLY-MANAGED' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  bookworm "$work/rootfs.tar" "$MIRROR" >&2
podman import --change 'WORKDIR /workspace' --change 'USER dynamo' \
  "$work/rootfs.tar" "$TAG" >/dev/null
echo "built $TAG in $(( $(date +%s) - started )) s" >&2
echo "$TAG"
