"""The catalogue is well formed, and the README's contract table says what the catalogue says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.cli.app import gpu_table, topologies_table
from harness.model.assets import ASSET_KEYS
from harness.serving import shapes
from harness.serving.requests import KINDS
from scenarios.catalogue import CATALOGUE, MULTIMODAL_FLAGS

README = Path(__file__).resolve().parent.parent / "README.md"
MM_FLAGS = " ".join(MULTIMODAL_FLAGS)


def test_every_topology_is_well_formed():
    assert len({t.name for t in CATALOGUE}) == len(CATALOGUE)
    for topology in CATALOGUE:
        unpinned = [w.component for w in topology.workers if not w.pin_request_plane]
        # A worker whose port Dynamo picks is told apart by its component alone.
        assert len(unpinned) == len(set(unpinned)), topology.name
        assert all(w.pin_request_plane for w in topology.workers if w.card is None)
        roles = [w.role for w in topology.workers]
        assert len(set(roles)) == len(roles), topology.name
        assert topology.public_workers, f"{topology.name} has no public worker"
        assert set(topology.requests) <= set(KINDS), topology.name
        assert shapes.selected(topology.requests, topology.shapes), topology.name
        assert {w.model for w in topology.workers} <= set(ASSET_KEYS), topology.name


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


def test_every_kind_has_its_shapes_as_data():
    """Each request kind's shapes start with its default; every shape changes something; a
    topology's selection is validated (one usage-error line for an unknown one)."""
    assert set(shapes.SHAPES) == set(KINDS)
    for kind, kind_shapes in shapes.SHAPES.items():
        assert kind_shapes[0].name == shapes.DEFAULT and kind_shapes[0].cheap, kind
        names = [s.name for s in kind_shapes]
        assert len(names) == len(set(names)), kind
        for shape in kind_shapes[1:]:
            assert shape.why, shape.label
    with pytest.raises(ValueError, match="shapes 'some'"):
        shapes.selected(("chat",), "some")
    with pytest.raises(ValueError, match="topology aggregated: shapes 'all', expected"):
        dataclasses.replace(CATALOGUE[0], shapes="all")
    with pytest.raises(KeyError, match=r"no request shape chat\[nope\]"):
        shapes.shape("chat", "nope")
