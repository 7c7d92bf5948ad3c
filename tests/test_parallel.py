"""`-n auto` in a run of the harness: one xdist worker more than the cores on the CPU tier
(its tests wait on processes), capped by free memory; one on the GPU tier (a session with every
GPU runs every layout that fits); xdist's own answer in another suite, under
PYTEST_XDIST_AUTO_NUM_WORKERS and for `-n logical`."""

from __future__ import annotations

import os

import psutil
import pytest
from xdist.plugin import pytest_xdist_auto_num_workers as xdist_own

from discovery_harness.plugin.parallel import GIB_PER_WORKER, XDIST_OWN_COUNT, auto_workers
from discovery_harness.runtime.tier import CPU, GPU

HARNESS_INI = "[pytest]\ndiscovery_harness_suite = true\n"


def test_the_cpu_tier_takes_one_worker_more_than_the_cores():
    assert auto_workers(CPU, 0, 2, 24.0) == 3
    assert auto_workers(None, 0, 8, 64.0) == 9  # auto without a GPU: the CPU tier


def test_free_memory_caps_the_cpu_tiers_workers_and_one_always_runs():
    assert auto_workers(CPU, 0, 8, 3 * GIB_PER_WORKER + 0.5) == 3
    assert auto_workers(CPU, 0, 2, 0.5) == 1


def test_the_gpu_tier_takes_one_worker_holding_every_gpu():
    assert auto_workers(GPU, 0, 16, 128.0) == 1  # asked for: its GPUs are the session's
    assert auto_workers(None, 4, 16, 128.0) == 1  # auto with usable GPUs: the GPU tier
    assert auto_workers(None, 0, 2, 24.0) == 3  # auto, no usable GPU: the CPU tier
    assert auto_workers(CPU, 4, 2, 24.0) == 3  # the CPU tier asked for: the GPUs aside


def _auto_count(pytester: pytest.Pytester, *args: str) -> int:
    config = pytester.parseconfig("-n", "auto", *args)
    return config.hook.pytest_xdist_auto_num_workers(config=config)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv(XDIST_OWN_COUNT, raising=False)


def test_a_harness_run_asks_the_harness(pytester: pytest.Pytester, no_gpu: None):
    pytester.makeini(HARNESS_INI)
    free = psutil.virtual_memory().available / 2**30
    expected = auto_workers(CPU, 0, len(os.sched_getaffinity(0)), free)
    assert abs(_auto_count(pytester) - expected) <= 1  # free memory moves between the two


def test_another_suite_and_an_explicit_count_keep_xdists_answer(
    pytester: pytest.Pytester, no_gpu: None, monkeypatch: pytest.MonkeyPatch
):
    config = pytester.parseconfig("-n", "auto")
    assert _auto_count(pytester) == xdist_own(config)
    pytester.makeini(HARNESS_INI)
    monkeypatch.setenv(XDIST_OWN_COUNT, "5")
    assert _auto_count(pytester) == 5
