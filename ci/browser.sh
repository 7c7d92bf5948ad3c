#!/usr/bin/env bash
# Headless Chromium for the HTML report's browser test (tests/test_reports.py): Debian's
# `chromium` package. Optional: without it that test is skipped with the reason. A second
# run is a no-op.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium
