"""The GPU job rehearsed in a container without a GPU (ci/rehearsal/run.sh): a runtime-like
image (Debian's externally-managed Python 3.11, user `dynamo` UID 1000, etcd and nats-server),
the CPU stack as a read-only system site-packages folder, the checkout owned by another user.
Every step up to the first one that needs a GPU must pass, and the GPU-tier run must fail
loudly. The same checks, run on a job whose install step is the old plain `pip install` into
the system Python, must fail."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.checkout_copy import copy_checkout
from tests.rehearsal import CONTAINER_MARKS, not_shown
from tests.rehearsal import rehearse as run_rehearsal

ROOT = Path(__file__).resolve().parent.parent
PLAIN_INSTALL = (
    "install() {\n"
    "  python3 -m pip install -q -r ci/requirements/harness.txt &&\n"
    "    python3 -m pip install -q --no-deps -e .\n"
    "}\n"
)

pytestmark = [pytest.mark.nightly, pytest.mark.timeout(900), *CONTAINER_MARKS]


def rehearse(checkout: Path) -> subprocess.CompletedProcess[str]:
    return run_rehearsal(checkout, timeout=840)


def unmet(result: subprocess.CompletedProcess[str]) -> list[str]:
    """What a rehearsal did not show, of everything up to the first need for a GPU."""
    expected = {
        "runs as the image's user, UID 1000": r"rehearsal: running as uid=1000\(dynamo\)",
        "the checkout is not writable by it": r"the checkout is read-only to dynamo",
        "preflight passes the stack versions": r"\[ok\] stack versions: ai-dynamo 1\.6\.1",
        "preflight reports the missing GPU": r"\[NO GPU \(allowed\)\] gpus: none visible",
        "preflight compares the image's tag": r"preflight: \[ok\] image: .*:1\.6\.1 asked for",
        "the install succeeds": r"install: ok",
        "fetch lists the selected models": r"Qwen/Qwen3-0\.6B: [\d.]+ GiB",
        "plan prints": r"# plan: tier gpu, 1 GPU\(s\)",
        "the GPU-tier run fails loudly": r"ERROR: --tier gpu: no GPU is visible here",
        "the job fails": r"GPU job FAILED \(exit 4\)",
    }
    missing = not_shown(result, expected)
    if result.returncode == 0:
        missing.append("the job exits non-zero")
    return missing


@pytest.mark.process
def test_gpu_job_rehearsal_runs_everything_up_to_the_gpu(tmp_path):
    result = rehearse(ROOT)
    assert unmet(result) == [], result.stdout[-6000:] + result.stderr[-3000:]


@pytest.mark.process
def test_gpu_job_rehearsal_catches_a_plain_pip_install_into_the_system_python(tmp_path):
    checkout = tmp_path / "checkout"
    written = copy_checkout(ROOT, checkout)  # the files git knows: no .venvs/, no build/
    print(f"rehearsal: the checkout's copy: {written / 1e6:.1f} MB in {checkout}")
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)  # run.sh lists its files
    job = checkout / "ci" / "gpu-job.sh"
    text = job.read_text()
    start = text.index("install() {")
    end = text.index("\n}\n", start) + 3
    job.write_text(text[:start] + PLAIN_INSTALL + text[end:])
    result = rehearse(checkout)
    out = result.stdout + result.stderr
    assert "externally-managed-environment" in out, out[-4000:]
    assert "the install succeeds" in unmet(result), out[-4000:]
