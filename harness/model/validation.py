"""A catalogue's invariants, checked when it is loaded (any catalogue: the project's, or one
named by HARNESS_CATALOGUE / `harness_catalogue`): a mistake in it is one clear error before
anything starts, not a worker on the wrong GPU or a need nobody meets at run time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from discovery_harness.model.assets import ASSET_KEYS
from discovery_harness.model.topology import (
    CHEAP_SHAPES,
    EVERY_SHAPE,
    Placement,
    Topology,
    WorkerSpec,
)


class CatalogueError(ValueError):
    """The catalogue breaks its invariants; the message lists every problem found."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        listed = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"catalogue {source} is not valid ({len(self.problems)} problem(s)):\n{listed}"
        )


def _twice(names: Iterable[str]) -> list[str]:
    return sorted(name for name, count in Counter(names).items() if count > 1)


def _needs(topology: Topology, workers: Sequence[WorkerSpec], where: str) -> list[str]:
    """Every card's needs can be met by a worker type of the same deployment: at least one
    of its alternative groups is wholly present."""
    present = {w.card.worker_type for w in workers if w.card is not None}
    problems = []
    for worker in workers:
        if worker.card is None or not worker.card.needs:
            continue
        if not any(set(group) <= present for group in worker.card.needs):
            wanted = " or ".join("+".join(group) for group in worker.card.needs)
            problems.append(
                f"{topology.name}{where}: worker '{worker.role}' needs {wanted}, which no worker "
                f"of the topology is (worker types: {', '.join(sorted(present)) or 'none'})"
            )
    return problems


def _placement(topology: Topology, placement: Placement) -> list[str]:
    """A layout names each of the topology's roles once, on a GPU it has."""
    where = f"{topology.name}, layout {placement.name}"
    roles = [w.role for w in topology.workers]
    placed = [w.role for w in placement.workers]
    problems = [
        f"{where}: role '{role}' is not a worker of the topology (roles: {', '.join(roles)})"
        for role in placed
        if role not in roles
    ]
    problems += [f"{where}: role '{role}' is placed twice" for role in _twice(placed)]
    problems += [
        f"{where}: worker '{r}' has no place in the layout" for r in roles if r not in placed
    ]
    if placement.gpus < 1:
        problems.append(f"{where}: a layout needs at least one GPU, not {placement.gpus}")
    problems += [
        f"{where}: worker '{w.role}' is on GPU {w.gpu}, outside the layout's {placement.gpus} "
        f"GPU(s) (0-{placement.gpus - 1})"
        for w in placement.workers
        if not 0 <= w.gpu < placement.gpus
    ]
    problems += [
        f"{where}: start order names '{role}', which is not a worker of the topology"
        for role in placement.start_order
        if role not in roles
    ]
    problems += [f"{where}: start order names '{r}' twice" for r in _twice(placement.start_order)]
    return problems


def topology_problems(topology: Topology) -> list[str]:
    name = topology.name
    roles = [w.role for w in topology.workers]
    problems = [f"{name}: role '{role}' is declared twice" for role in _twice(roles)]
    problems += [
        f"{name}: worker '{w.role}' uses asset '{w.model}', which is not one of "
        f"{', '.join(ASSET_KEYS)}"
        for w in topology.workers
        if w.model not in ASSET_KEYS
    ]
    problems += [
        f"{name}: asset '{key}' is not one of {', '.join(ASSET_KEYS)}"
        for key in topology.assets
        if key not in ASSET_KEYS
    ]
    if not topology.requests:
        problems.append(f"{name}: no request kind to prove it serves")
    if topology.shapes not in (CHEAP_SHAPES, EVERY_SHAPE):
        problems.append(
            f"{name}: shapes {topology.shapes!r}, expected {CHEAP_SHAPES!r} or {EVERY_SHAPE!r}"
        )
    if not topology.public_workers:
        problems.append(f"{name}: no public worker (the frontend would list nothing)")
    unpinned = [w.component for w in topology.workers if not w.pin_request_plane]
    problems += [
        f"{name}: two workers whose port Dynamo picks share component '{c}' (they could not "
        "be told apart)"
        for c in _twice(unpinned)
    ]
    problems += [
        f"{name}: known violation '{k.kind}' has a window of {k.window.seconds:g} s (more than "
        "0, measured)"
        for k in topology.known_violations
        if k.window is not None and k.window.seconds <= 0
    ]
    problems += _needs(topology, topology.workers, "")
    for era in topology.eras:
        if era.workers:
            problems += _needs(topology, era.workers, f" (ai-dynamo {era.releases})")
    if not topology.gpu.placements:
        problems.append(f"{name}: no GPU layout")
    single = any(p.gpus == 1 for p in topology.gpu.placements)
    if single == (topology.gpu.no_single_gpu is not None):
        problems.append(
            f"{name}: a 1-GPU layout wherever Dynamo has one; without it, say why "
            "(GpuProfile.no_single_gpu), and only then"
        )
    for placement in topology.gpu.placements:
        problems += _placement(topology, placement)
    return problems


def catalogue_problems(topologies: Sequence[Topology], gpu_models: Iterable[str] = ()) -> list[str]:
    """Every broken invariant of the catalogue, each a sentence naming where."""
    problems = [f"topology '{n}' is declared twice" for n in _twice(t.name for t in topologies)]
    problems += [
        f"GPU_MODELS names asset '{key}', which is not one of {', '.join(ASSET_KEYS)}"
        for key in gpu_models
        if key not in ASSET_KEYS
    ]
    for topology in topologies:
        problems += topology_problems(topology)
    return problems
