#!/usr/bin/env bash
# The CPU tier inside Dynamo's sglang runtime image, with no GPU and no driver: a step for
# Dynamo's gpu_0 job (its PR pipeline runs `pre_merge and sglang and gpu_0` in the PR's image
# on CPU runners). Installs the harness from this checkout (a wheel, into a venv over the
# image's own packages, nothing of the image replaced), runs the CPU tier's per-change
# scenarios (`-m "pre_merge and gpu_0"`: the whole #4486 class), writes JUnit, report.json,
# report.md and report.html to $REPORTS and the matrix to the job's step summary.
#
#   bash ci/dynamo-cpu-job.sh [all|harness|preflight|install|run|collect]
#
# Settings (environment), as ci/gpu-job.sh's: MARKS, REPORTS (default
# /tmp/harness-gpu-job/reports), WORK, ETCD_ENDPOINTS + NATS_SERVER (else the image's etcd
# and nats-server binaries). Exit status: the run's (0: every topology kept its contract).
TIER=cpu exec bash "$(dirname "${BASH_SOURCE[0]}")/gpu-job.sh" "${1:-all}"
