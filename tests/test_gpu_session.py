"""A GPU-tier session never passes with nothing run: no GPU, a driver too old, more xdist
workers than GPUs are usage errors before anything starts; a layout too big for the GPUs is
skipped with the reason, and the plan leaves it out the same way."""

from __future__ import annotations

import json
import time

import pytest

from discovery_harness.cli import app as cli
from discovery_harness.model.topology import Placement, Scenario, WorkerPlacement
from discovery_harness.runtime import gpu_session, gpus
from discovery_harness.runtime.preflight import driver_problem
from discovery_harness_scenarios.catalogue import CATALOGUE, LLM_DIFFUSION, by_name
from tests.inner_pytest import ONE_GPU, run_pytest


@pytest.mark.process
def test_gpu_tier_without_a_gpu_is_one_usage_error_within_seconds():
    started = time.monotonic()
    result = run_pytest(
        "scenarios", "-m", "e2e and gpu_1", "--tier", "gpu", env={"CUDA_VISIBLE_DEVICES": ""}
    )
    assert result.returncode == 4, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and "--tier gpu: no GPU is visible here" in lines[0], lines
    assert "passed" not in result.stdout and "skipped" not in result.stdout
    assert time.monotonic() - started < 30


@pytest.mark.process
def test_more_xdist_workers_than_gpus_is_a_usage_error():
    result = run_pytest(
        "scenarios", "-n", "2", "--tier", "gpu", "-m", "gpu_1", env=ONE_GPU
    )
    assert result.returncode == 4, result.stdout + result.stderr
    assert "-n 2 is more xdist workers than the 1 visible GPU(s)" in result.stderr


@pytest.mark.process
def test_listing_needs_no_gpu():
    result = run_pytest(
        "--collect-only", "-q", "scenarios", "--tier", "gpu", env={"CUDA_VISIBLE_DEVICES": ""}
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("driver", "cuda", "fits"),
    [
        ("535.104.05", "13.0", False),
        ("580.82.07", "13.0", True),
        ("525.60.13", "12.8", True),
        ("470.57.02", "12.1", False),
    ],
)
def test_the_driver_must_suit_the_cuda_build(driver, cuda, fits):
    problem = driver_problem(driver, cuda)
    assert (problem is None) == fits, problem
    if problem:
        assert driver in problem and f"CUDA {cuda}" in problem


def test_every_gpu_layout_declares_the_memory_of_each_worker():
    for topology in CATALOGUE:
        for layout in topology.gpu.placements:
            for worker in layout.workers:
                assert worker.vram_gib, f"{topology.name} {layout.name} {worker.role}"


def test_a_layout_too_big_for_its_gpu_is_skipped_with_the_reason():
    scenario = Scenario(LLM_DIFFUSION, LLM_DIFFUSION.gpu.packed)
    reason = gpu_session.why_skipped(scenario, ("0",), (24.0,))
    assert reason == (
        "the 1gpu layout of llm-diffusion does not fit: needs ~56.0 GiB on its GPU 0; the GPU "
        "it would get has 24.0 GiB"
    )
    assert gpu_session.why_skipped(scenario, ("0",), (80.0,)) is None
    assert gpu_session.why_skipped(scenario, ("0",), (None,)) is None  # unknown: sglang decides
    assert "needs 1 GPU(s); this run has 0" in gpu_session.why_skipped(scenario, (), ())


def test_co_located_workers_add_up_on_their_gpu():
    layout = Placement(
        gpus=2,
        workers=(
            WorkerPlacement(role="a", gpu=0, vram_gib=10.0),
            WorkerPlacement(role="b", gpu=0, vram_gib=10.0),
            WorkerPlacement(role="c", gpu=1, vram_gib=5.0),
        ),
    )
    assert gpus.memory_needed_gib(layout) == {0: 20.0, 1: 5.0}
    assert "needs ~20.0 GiB on its GPU 0" in gpus.does_not_fit(layout, (16.0, 80.0))
    assert gpus.does_not_fit(layout, (24.0, 8.0)) is None


def test_the_memory_of_the_share_can_be_declared():
    assert gpu_session.share_memory(("0", "1"), {gpu_session.MEMORY_VARIABLE: "24"}) == (24, 24)
    assert gpu_session.share_memory(("0",), {}) == (None,)  # no nvidia-smi here


def _plan(capsys: pytest.CaptureFixture[str], memory: str) -> dict:
    assert cli.main(["plan", "--tier", "gpu", "--gpus", "1", "--gpu-memory", memory, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_plan_leaves_out_what_does_not_fit_with_the_reason(capsys):
    small = _plan(capsys, "24")
    assert "llm-diffusion" not in {w["topology"] for w in small["workers"]}
    left_out = {(n["topology"], n["layout"]): n["reason"] for n in small["not_planned"]}
    assert "needs ~56.0 GiB" in left_out[("llm-diffusion", "1gpu")]
    assert "needs 2 GPU(s)" in left_out[("multinode", "2gpu")]
    big = _plan(capsys, "80")
    assert "llm-diffusion" in {w["topology"] for w in big["workers"]}
    assert "llm-diffusion" not in {n["topology"] for n in big["not_planned"]}


def test_single_gpu_multimodal_p_d_caps_kv_absolutely_as_dynamo_does():
    layout = by_name("mm-native-p-d").gpu.packed
    for role in ("mm-prefill", "mm-decode"):
        flags = layout.of(role).flags
        assert flags[flags.index("--max-total-tokens") + 1] == "1024", flags
        assert not layout.of(role).env  # no UCX setting no upstream script sets
