"""GPU shares, layouts and the tier choice, without a GPU."""

from __future__ import annotations

import pytest

from discovery_harness.model.topology import Placement, WorkerPlacement
from discovery_harness.runtime import gpus, tier
from discovery_harness_scenarios.catalogue import CATALOGUE

TWO_GPU = Placement(
    gpus=2, workers=(WorkerPlacement(role="prefill", gpu=0), WorkerPlacement(role="decode", gpu=1))
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", ()), ("0", ("0",)), ("2, 3", ("2", "3")), ("-1", ()), ("1,-1,2", ("1",))],
)
def test_the_runners_cuda_visible_devices_is_honoured(value, expected):
    assert gpus.visible_gpus({"CUDA_VISIBLE_DEVICES": value}) == expected


def test_xdist_workers_get_disjoint_shares():
    visible = ("0", "1", "2", "3", "4")
    shares = [gpus.share(visible, i, 2) for i in range(2)]
    assert shares == [("0", "1"), ("2", "3")]
    assert gpus.share(visible, 0, 1) == visible
    assert gpus.share(("0",), 1, 2) == ()
    assert gpus.xdist_position({"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"})
    assert gpus.xdist_position({}) == (0, 1)


def test_an_inner_session_is_not_taken_for_a_sibling_xdist_worker():
    outer = {
        "PYTEST_XDIST_WORKER": "gw1",
        "PYTEST_XDIST_WORKER_COUNT": "2",
        "PYTEST_CURRENT_TEST": "tests/x.py::t (call)",
        "CUDA_VISIBLE_DEVICES": "0,1",
    }
    inner = gpus.session_of_its_own(outer)
    assert inner == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert gpus.xdist_position(inner) == (0, 1)


def test_a_layout_maps_onto_the_share_or_says_why_not():
    assert gpus.assign(TWO_GPU, ("4", "7")) == {"prefill": ("4",), "decode": ("7",)}
    with pytest.raises(gpus.NotEnoughGpus, match=r"needs 2 GPU\(s\); this run's share is 1 \(4\)"):
        gpus.assign(TWO_GPU, ("4",))


def test_every_gpu_layout_is_well_formed():
    for topology in CATALOGUE:
        roles = sorted(w.role for w in topology.workers)
        assert topology.gpu.packed.gpus == 1 or topology.gpu.no_single_gpu, topology.name
        for layout in topology.gpu.placements:
            where = f"{topology.name}/{layout.name}"
            assert sorted(w.role for w in layout.workers) == roles, where
            assert {w.gpu for w in layout.workers} == set(range(layout.gpus)), where
            assert set(layout.start_order) <= set(roles), where
            colocated = len(layout.workers) > layout.gpus
            assert not colocated or layout.start_order, f"{where}: co-located, no start order"


def test_tier_auto_takes_the_cpu_tier_without_a_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    choice = tier.choose("auto")
    assert choice.tier is tier.CPU
    assert "no CUDA GPU visible" in choice.reason


@pytest.mark.process
def test_tier_auto_needs_a_cuda_build_of_sglang_too(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    choice = tier.choose("auto")
    assert choice.tier is tier.CPU
    assert "1 GPU(s) visible but" in choice.reason
    assert "sgl_kernel" in choice.reason or "CPU-only" in choice.reason


def test_an_explicit_tier_is_taken_as_asked():
    assert tier.choose("gpu") == tier.TierChoice(tier.GPU, "asked for with --tier")
    with pytest.raises(ValueError, match="auto, cpu or gpu"):
        tier.choose("tpu")
