#!/usr/bin/env bash
# What the GPU-job rehearsal needs on a fresh Debian machine (root): podman with runc (its
# configuration: ci/podman-docker-api.sh conf) and mmdebstrap to build the runtime-like image.
set -euo pipefail
missing=()
for tool in podman runc mmdebstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
((${#missing[@]})) || exit 0
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
