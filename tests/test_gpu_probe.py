"""One probe, in the workers' interpreter, decides the tier and the GPU count (torch's CUDA
build, sglang's kernels, a CUDA init), and a GPU the stack cannot use is the
environment's fault: a driver showing one GPU (a stand-in nvidia-smi answering, and
CUDA_VISIBLE_DEVICES=0) with this checkout's CPU build of torch is one usage error naming
the GPU before any worker starts, never workers that exit as topologies breaking contracts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from discovery_harness.runtime import gpu_probe, preflight, tier
from tests.inner_pytest import run_pytest

NVIDIA_SMI = """#!/bin/sh
# A driver that shows one GPU: what `nvidia-smi --query-gpu=...` prints on such a machine.
case "$1" in
  *driver_version*) echo "${DRIVER:-580.95.05}" ;;
  *uuid*) echo "0, GPU-00000000-1111-2222-3333-444444444444, 24576" ;;
  *name*) echo "0, NVIDIA L4, 24576" ;;
  *) echo "0" ;;
esac
"""


@pytest.fixture
def one_gpu_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """nvidia-smi lists GPU 0; the environment for an inner run, and this process's too."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(NVIDIA_SMI)
    smi.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": "0"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(gpu_probe.GIVEN_ENV, raising=False)
    return env


@pytest.mark.process
def test_tier_gpu_on_a_gpu_torch_cannot_use_is_one_usage_error_before_any_worker(one_gpu_shown):
    result = run_pytest(
        "-q", "--tier", "gpu", "--infra", "process", "scenarios/test_topologies.py",
        env=one_gpu_shown, timeout=120,
    )  # fmt: skip
    out = result.stdout + result.stderr
    assert result.returncode == 4, out  # a usage error: nothing ran
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1, out
    assert "--tier gpu: GPU(s) 0: torch " in errors[0] and "CPU-only build" in errors[0], out
    assert "worker-exited" not in out and "passed" not in out and "failed" not in out


@pytest.mark.process
def test_auto_takes_the_cpu_tier_and_says_the_gpu_is_unusable(one_gpu_shown):
    choice = tier.choose("auto", gpu_probe.probe())
    assert choice.tier is tier.CPU
    assert "1 GPU(s) visible but GPU(s) 0: torch " in choice.reason
    assert "CPU-only build" in choice.reason


@pytest.mark.process
def test_preflight_reads_the_same_probe(one_gpu_shown):
    check = preflight.check_gpus()
    assert not check.ok and check.needs_gpu
    assert "not usable: GPU(s) 0: torch " in check.detail and "CPU-only" in check.detail


@pytest.mark.parametrize(
    ("answer", "driver", "says"),
    [
        ({"torch": "2.13.0", "cuda": "13.0", "count": 1}, "580.95.05", None),
        ({"torch": "2.13.0", "cuda": "13.0", "count": 1}, "550.54.15", "driver 550.54.15"),
        (
            {"torch": "2.13.0", "cuda": "13.0", "count": 0, "error": "no CUDA-capable device"},
            "580.95.05",
            "a CUDA init with torch 2.13.0 (CUDA 13.0) fails: no CUDA-capable device",
        ),
        ({"torch": None, "error": "torch does not import: boom"}, "580.95.05", "boom"),
        (
            {"torch": "2.13.0", "cuda": "13.0", "count": 1, "sglang": True, "sgl_kernel": None},
            "580.95.05",
            "sglang has no CUDA kernels in",  # the workers' interpreter's, not the harness's
        ),
    ],
    ids=["usable", "driver-too-old", "init-fails", "no-torch", "no-sgl-kernel"],
)
@pytest.mark.process
def test_each_unusable_stack_is_named(one_gpu_shown, monkeypatch, answer, driver, says):
    monkeypatch.setenv(gpu_probe.GIVEN_ENV, json.dumps(answer))
    monkeypatch.setenv("DRIVER", driver)
    found = gpu_probe.probe()
    assert found.visible == ("0",)
    if says is None:
        assert found.problem is None and found.usable == ("0",)
    else:
        assert found.usable == () and says in (found.problem or ""), found


def test_no_gpu_visible_needs_no_cuda_init(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv(gpu_probe.GIVEN_ENV, "not json: it must not be read")
    assert gpu_probe.probe() == gpu_probe.GpuProbe((), (), None)
