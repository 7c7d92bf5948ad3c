"""The catalogue is well formed, docs/topologies.md is what it generates, and whatever contract
or GPU-layout rows the hand-written docs (README.md, docs/*.md) show are the catalogue's."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from discovery_harness.cli.tables import DOC_COMMAND, catalogue_doc, gpu_table, topologies_table
from discovery_harness.model.assets import ASSET_KEYS
from discovery_harness.model.catalogue import Catalogue, load
from discovery_harness.model.topology import (
    GpuProfile,
    Placement,
    Topology,
    WorkerPlacement,
    WorkerSpec,
)
from discovery_harness.model.validation import CatalogueError, catalogue_problems
from discovery_harness.serving import shapes
from discovery_harness.serving.requests import KINDS
from discovery_harness_scenarios.catalogue import (
    CATALOGUE,
    DISAGGREGATED,
    GPU_MODELS,
    MULTIMODAL_FLAGS,
)
from tests.inner_pytest import run_cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# The hand-written docs: the README and every docs/*.md but the generated one.
GENERATED_DOC = ROOT / "docs" / "topologies.md"
HAND_WRITTEN = (README, *sorted(set((ROOT / "docs").glob("*.md")) - {GENERATED_DOC}))
MM_FLAGS = " ".join(MULTIMODAL_FLAGS)


def test_the_catalogue_holds_its_invariants():
    assert catalogue_problems(CATALOGUE, GPU_MODELS) == []
    for topology in CATALOGUE:
        assert set(topology.requests) <= set(KINDS), topology.name
        assert all(w.pin_request_plane for w in topology.workers if w.card is None)
        assert shapes.selected(topology.requests, topology.shapes), topology.name


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
    "an unknown selection of request shapes": (
        _broken(shapes="all"),
        ["shapes 'all', expected 'cheap' or 'every'"],
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


@pytest.mark.process
def test_a_catalogue_named_by_the_environment_is_checked_when_loaded(tmp_path, monkeypatch):
    """HARNESS_CATALOGUE's catalogue too: loading it fails with every problem, and a command
    reading it says so in one usage error (exit 4), no traceback."""
    (tmp_path / "broken_catalogue.py").write_text(
        "import dataclasses\n"
        "from discovery_harness_scenarios.catalogue import AGGREGATED\n"
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
    result = run_cli("topologies", whole_env=env)
    assert result.returncode == 4, result.stderr
    assert "catalogue 'broken_catalogue' is not valid (2 problem(s))" in result.stderr
    assert "Traceback" not in result.stderr


def test_docs_topologies_is_the_catalogue_generated():
    """docs/topologies.md equals what the catalogue generates, line for line: adding a mode
    to the catalogue and regenerating it is the whole change to the docs."""
    written = (ROOT / "docs" / "topologies.md").read_text().splitlines()
    generated = catalogue_doc().splitlines()
    first = next(
        (i for i, (a, b) in enumerate(zip(written, generated, strict=False)) if a != b),
        min(len(written), len(generated)),
    )
    assert written == generated, (
        f"docs/topologies.md differs from the catalogue from line {first + 1}:\n"
        f"  written:   {written[first] if first < len(written) else '(end)'}\n"
        f"  generated: {generated[first] if first < len(generated) else '(end)'}\n"
        f"regenerate it: {DOC_COMMAND}"
    )


def _hand_written_rows_like(table: str) -> tuple[list[str], list[str]]:
    """(rows of the hand-written docs shaped like the table's rows: a topology's name first,
    as many cells, each prefixed with its file; the generated rows)."""
    generated = table.splitlines()[2:]
    width = generated[0].count(" | ")
    names = tuple(f"| {t.name} |" for t in CATALOGUE)
    # A row of a worker: a topology's name, then one of its roles (a history table's rows
    # can have as many cells).
    rows_of_workers = {f"| {t.name} | {w.role} |" for t in CATALOGUE for w in t.workers}
    written = [
        f"{doc.relative_to(ROOT)}: {line}"
        for doc in HAND_WRITTEN
        for line in doc.read_text().splitlines()
        if line.startswith(names)
        and line.count(" | ") == width
        and any(line.startswith(prefix) for prefix in rows_of_workers)
    ]
    return written, generated


def _not_generated(written: list[str], generated: list[str]) -> list[str]:
    return [row for row in written if row.split(": ", 1)[1] not in generated]


def test_what_the_docs_say_of_the_contracts_is_the_catalogue():
    """Whatever contract rows README.md or a hand-written docs/*.md still shows are the
    catalogue's (the whole table is docs/topologies.md, generated)."""
    written, generated = _hand_written_rows_like(topologies_table())
    generated += [row.replace(f"`{MM_FLAGS} ", "MM + `") for row in generated]
    assert _not_generated(written, generated) == []


def test_what_the_docs_say_of_the_gpu_layouts_is_the_catalogue():
    written, generated = _hand_written_rows_like(gpu_table())
    assert _not_generated(written, generated) == []


def test_a_wrong_row_in_a_hand_written_doc_is_found():
    """The row check can fail: a GPU-layout row with another VRAM figure is not the
    catalogue's."""
    written, generated = _hand_written_rows_like(gpu_table())
    wrong = "docs/gpu.md: " + generated[0].replace(" GiB |", " GiB (wrong) |", 1)
    assert _not_generated([*written, wrong], generated) == [wrong]


def test_a_topology_the_cpu_tier_cannot_run_is_skipped_there_with_its_reason():
    import dataclasses

    from discovery_harness.plugin import topology_param

    gpu_only = dataclasses.replace(CATALOGUE[0], cpu_skip="needs a CUDA checkpoint")
    skips = [m for m in topology_param(gpu_only).marks if m.name == "skip"]
    assert [m.kwargs["reason"] for m in skips] == ["GPU-only: needs a CUDA checkpoint"]
    assert not [m for m in topology_param(CATALOGUE[0]).marks if m.name == "skip"]


def test_a_catalogue_change_shows_in_the_generated_docs():
    """The equality check can fail: a renamed role changes the generated file."""
    renamed = dataclasses.replace(
        DISAGGREGATED.workers[1],
        card=dataclasses.replace(DISAGGREGATED.workers[1].card, public=False),
    )
    changed = Catalogue(
        (dataclasses.replace(DISAGGREGATED, workers=(DISAGGREGATED.workers[0], renamed)),)
    )
    assert catalogue_doc(changed) != catalogue_doc(Catalogue((DISAGGREGATED,)))
    assert "| disaggregated | decode | init_decode |" in catalogue_doc(changed)


def test_every_kind_has_its_shapes_as_data():
    """Each request kind's shapes start with its default; every other shape says what it
    reaches; a selection or a shape that does not exist is one clear error."""
    assert set(shapes.SHAPES) == set(KINDS)
    for kind, kind_shapes in shapes.SHAPES.items():
        assert kind_shapes[0].name == shapes.DEFAULT and kind_shapes[0].cheap, kind
        names = [s.name for s in kind_shapes]
        assert len(names) == len(set(names)), kind
        for shape in kind_shapes[1:]:
            assert shape.why, shape.label
    with pytest.raises(ValueError, match="shapes 'some'"):
        shapes.selected(("chat",), "some")
    with pytest.raises(KeyError, match=r"no request shape chat\[nope\]"):
        shapes.shape("chat", "nope")
