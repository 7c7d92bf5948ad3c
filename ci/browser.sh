#!/usr/bin/env bash
# Headless Chromium for the HTML report's browser test (tests/test_reports.py): Debian's
# `chromium` package, through sudo when not root. Optional: without it that test is skipped
# with the reason. A second run is a no-op.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
as_root=(); [ "$(id -u)" -eq 0 ] || as_root=(sudo -n)
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium
