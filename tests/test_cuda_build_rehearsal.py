"""The CPU tier inside the CUDA builds of Dynamo's runtime image, with no GPU and no driver:
the situation of Dynamo's gpu_0 job, which runs in the PR's image on CPU runners.

`ci/rehearsal/run.sh --cuda`: the runtime-like image (Debian's Python 3.11, user `dynamo` UID
1000, etcd and nats-server) with the CUDA stack of ci/rehearsal/cuda-stack.txt as its
/usr/local (CUDA torch from the package index, sglang 0.5.21 with sgl-kernel, flashinfer and
its whole dependency set, ai-dynamo 1.6.1), the checkout owned by another user and read-only,
and ci/dynamo-cpu-job.sh run in it: install as ci/gpu-job.sh installs, then the CPU tier's
per-change scenarios. It must pass; and it must fail when a stand-in imports sglang's
CUDA-only kernels (sgl_kernel cannot load its kernels without a driver).

Costs (this machine): the stack's first build downloads and installs 11 GB in about 7 min
(kept in build/rehearsal/, reused while its inputs are unchanged); each rehearsal then takes
about 2 min (108 s: the wheel, preflight, the libraries, 26 scenarios in 76 s). Marked
`cuda_rehearsal` (not nightly): `.ci/run` leaves it out, the nightly workflow runs it; by hand
`sudo .venv/bin/python -m pytest -m cuda_rehearsal` (docs/ci.md "The CPU tier in the CUDA build").
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.checkout_copy import copy_checkout
from tests.rehearsal import CONTAINER_MARKS, not_shown, rehearse

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.cuda_rehearsal, pytest.mark.timeout(2700), *CONTAINER_MARKS]


def unmet(result: subprocess.CompletedProcess[str]) -> list[str]:
    """What the rehearsal did not show of a CPU job passing in the CUDA build."""
    out = result.stdout + result.stderr
    expected = {
        "runs as the image's user, UID 1000": r"rehearsal: running as uid=1000\(dynamo\)",
        "no driver": r"rehearsal: no nvidia-smi",
        "the image's torch is a CUDA build": r"rehearsal: torch 2\.13\.0\S* CUDA \d+\.\d+",
        "the harness installs as the GPU job installs it": r"install: ok",
        "the image's stack is left as it is": r"the image's stack: .*torch==2\.13\.0",
        "auto takes the CPU tier, with its reason": r"tier auto here: tier cpu: auto: no CUDA GPU",
        "the run is the CPU tier": r"discovery harness: tier cpu: asked for with --tier",
        "the matrix passes": r"\d+ passed",
        "the job passes": r"CPU job passed",
        "the step summary has the matrix": r"rehearsal: step summary: [1-9]\d* lines",
    }
    missing = not_shown(result, expected)
    if re.search(r"\d+ failed|\d+ error", out):
        missing.append("no test failed")
    if result.returncode != 0:
        missing.append("the job exits 0")
    return missing


def test_cuda_build_rehearsal_the_cpu_tier_passes_in_the_runtime_images_stack():
    result = rehearse(ROOT, "--cuda", timeout=2600)
    assert unmet(result) == [], result.stdout[-8000:] + result.stderr[-3000:]


def test_cuda_build_rehearsal_fails_when_a_stand_in_imports_a_cuda_only_module(tmp_path):
    """The stand-ins avoid sglang's CUDA-only kernels by design; one that imports them fails
    where there is no driver, and the rehearsal says so."""
    checkout = tmp_path / "checkout"
    written = copy_checkout(ROOT, checkout)
    print(f"rehearsal: the checkout's copy: {written / 1e6:.1f} MB in {checkout}")
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)  # run.sh lists its files
    engine = checkout / "workers" / "cpu_engine.py"
    text = engine.read_text()
    marker = "from __future__ import annotations\n"
    engine.write_text(text.replace(marker, marker + "\nimport sgl_kernel  # noqa: F401\n", 1))
    result = rehearse(checkout, "--cuda", timeout=2600)
    missing = unmet(result)
    out = result.stdout + result.stderr
    assert "the job passes" in missing and "the job exits 0" in missing, out[-6000:]
    assert "sgl_kernel" in out, out[-6000:]
