"""The catalogue is well formed, and the README's contract table says what the catalogue says."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.tables import gpu_table, topologies_table
from harness.model.assets import ASSET_KEYS
from harness.model.catalogue import load
from harness.model.topology import GpuProfile, Placement, Topology, WorkerPlacement, WorkerSpec
from harness.model.validation import CatalogueError, catalogue_problems
from harness.serving.requests import KINDS
from scenarios.catalogue import CATALOGUE, DISAGGREGATED, GPU_MODELS, MULTIMODAL_FLAGS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MM_FLAGS = " ".join(MULTIMODAL_FLAGS)


def test_the_catalogue_holds_its_invariants():
    assert catalogue_problems(CATALOGUE, GPU_MODELS) == []
    for topology in CATALOGUE:
        assert set(topology.requests) <= set(KINDS), topology.name
        assert all(w.pin_request_plane for w in topology.workers if w.card is None)


def _broken(**changes: object) -> Topology:
    return dataclasses.replace(DISAGGREGATED, **changes)


def _layout(*workers: WorkerPlacement, gpus: int = 1, order: tuple[str, ...] = ()) -> GpuProfile:
    return GpuProfile(placements=(Placement(gpus=gpus, workers=workers, start_order=order),))


def replace_model(worker: WorkerSpec) -> WorkerSpec:
    return dataclasses.replace(worker, model="txt")


BROKEN = {
    "a mistyped role in a layout": (
        _broken(
            gpu=_layout(
                WorkerPlacement(role="prefil", gpu=0), WorkerPlacement(role="decode", gpu=0)
            )
        ),
        [
            "layout 1gpu: role 'prefil' is not a worker of the topology (roles: prefill, decode)",
            "layout 1gpu: worker 'prefill' has no place in the layout",
        ],
    ),
    "a mistyped role in a start order": (
        _broken(
            gpu=_layout(
                WorkerPlacement(role="prefill", gpu=0),
                WorkerPlacement(role="decode", gpu=0),
                order=("prefill", "decod"),
            )
        ),
        ["start order names 'decod', which is not a worker of the topology"],
    ),
    "an unknown asset": (
        _broken(workers=(DISAGGREGATED.workers[0], replace_model(DISAGGREGATED.workers[1]))),
        ["worker 'decode' uses asset 'txt', which is not one of"],
    ),
    "a need no role satisfies": (
        _broken(
            workers=DISAGGREGATED.workers[1:], gpu=_layout(WorkerPlacement(role="decode", gpu=0))
        ),
        [
            "worker 'decode' needs prefill, which no worker of the topology is "
            "(worker types: decode)"
        ],
    ),
    "a GPU layout that does not fit its own count": (
        _broken(
            gpu=_layout(
                WorkerPlacement(role="prefill", gpu=0), WorkerPlacement(role="decode", gpu=1)
            )
        ),
        ["layout 1gpu: worker 'decode' is on GPU 1, outside the layout's 1 GPU(s) (0-0)"],
    ),
}


@pytest.mark.parametrize("mistake", BROKEN)
def test_a_broken_topology_is_named_with_its_mistake(mistake):
    topology, expected = BROKEN[mistake]
    problems = catalogue_problems((topology,))
    for text in expected:
        assert any(text in p for p in problems), problems


def test_a_catalogue_named_by_the_environment_is_checked_when_loaded(tmp_path, monkeypatch):
    """HARNESS_CATALOGUE's catalogue too: loading it fails with every problem, and a command
    reading it says so in one usage error (exit 4), no traceback."""
    (tmp_path / "broken_catalogue.py").write_text(
        "import dataclasses\n"
        "from scenarios.catalogue import AGGREGATED\n"
        "worker = dataclasses.replace(AGGREGATED.workers[0], model='txt')\n"
        "CATALOGUE = (dataclasses.replace(AGGREGATED, workers=(worker,)), AGGREGATED)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HARNESS_CATALOGUE", "broken_catalogue")
    with pytest.raises(CatalogueError) as failure:
        load()
    assert failure.value.problems == [
        "topology 'aggregated' is declared twice",
        "aggregated: worker 'worker' uses asset 'txt', which is not one of "
        + ", ".join(ASSET_KEYS),
    ]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    result = subprocess.run(
        [sys.executable, "-m", "harness", "topologies"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 4, result.stderr
    assert "catalogue 'broken_catalogue' is not valid (2 problem(s))" in result.stderr
    assert "Traceback" not in result.stderr


def test_readme_contract_table_matches_the_catalogue():
    generated = topologies_table().replace(f"`{MM_FLAGS} ", "MM + `").splitlines()[2:]
    readme_rows = [line for line in README.read_text().splitlines() if line.startswith("| ")]
    for row in generated:
        assert row in readme_rows, f"README is missing or differs on:\n{row}"


def test_readme_gpu_table_matches_the_catalogue():
    readme_rows = [line for line in README.read_text().splitlines() if line.startswith("| ")]
    for row in gpu_table().splitlines()[2:]:
        assert row in readme_rows, f"README's GPU runners table is missing or differs on:\n{row}"


def test_a_topology_the_cpu_tier_cannot_run_is_skipped_there_with_its_reason():
    import dataclasses

    from harness.plugin import topology_param

    gpu_only = dataclasses.replace(CATALOGUE[0], cpu_skip="needs a CUDA checkpoint")
    skips = [m for m in topology_param(gpu_only).marks if m.name == "skip"]
    assert [m.kwargs["reason"] for m in skips] == ["GPU-only: needs a CUDA checkpoint"]
    assert not [m for m in topology_param(CATALOGUE[0]).marks if m.name == "skip"]
