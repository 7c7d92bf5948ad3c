"""Scenarios per tier: one item per topology on the CPU tier, one per GPU layout on the GPU
tier, with their marks and timeouts; the selection rules for self-tests and nightly items.
`parametrize_scenarios` and `topology_param` are what `scenarios/` imports."""

from __future__ import annotations

import re

import pytest

from discovery_harness.model.topology import Scenario, Topology, UnsupportedRelease
from discovery_harness.plugin import scope
from discovery_harness.plugin.session import GPU_MEMORY_KEY, GPU_SHARE_KEY, chosen_tier
from discovery_harness.runtime import dynamo_env, gpu_session


def parametrize_scenarios(metafunc: pytest.Metafunc, topologies: tuple[Topology, ...]) -> None:
    """One item per topology on the CPU tier (its packed layout); on the GPU tier one per
    layout, marked gpu_N from the layout, with the layout's timeout."""
    if "scenario" not in metafunc.fixturenames:
        return
    chosen = chosen_tier(metafunc.config)
    version = dynamo_env.active().version
    params = []
    for declared in topologies:
        try:  # as the run's Dynamo release deploys it (an older release: its era's workers)
            topology = declared.for_release(version)
        except UnsupportedRelease as reason:
            skip = pytest.mark.skip(reason=str(reason))
            params.append(pytest.param(Scenario.packed(declared), id=declared.name, marks=skip))
            continue
        common = [getattr(pytest.mark, m) for m in topology.marks]
        if not chosen.gpus:  # the packed layout, which needs no GPU here
            marks = [*common, pytest.mark.gpu_0, pytest.mark.timeout(topology.timeout_s)]
            marks += _cpu_skip(topology)
            if topology.cpu_nightly:
                marks.append(pytest.mark.nightly)
            params.append(pytest.param(Scenario.packed(topology), id=topology.name, marks=marks))
            continue
        for placement in topology.gpu.placements:
            marks = [
                *common,
                getattr(pytest.mark, f"gpu_{placement.gpus}"),
                pytest.mark.timeout(placement.timeout_s),
            ]
            if topology.gpu.nightly:
                marks.append(pytest.mark.nightly)
            scenario = Scenario(topology, placement)
            params.append(
                pytest.param(scenario, id=f"{topology.name}-{placement.name}", marks=marks)
            )
    metafunc.parametrize("scenario", params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Of the harness's own items (plugin.scope): self-tests run only when -m names them
    (`selftest`, or `long` for the long ones; the pre_merge ones also with no -m at all);
    nightly items only when -m is given, and not for an -m that asks for pre_merge without
    naming nightly (schedules as Dynamo's suite has them:
    an item is nightly or pre_merge, so `-m "pre_merge and gpu_0"` is the CPU tier's per-change
    set). The harness's tests of itself (marker `harness_tests`) join an -m selection only
    when it names them (`selftest`, `nightly`, `long`, `unit`, `process`, `harness_tests`):
    `-m multimodal` is the multimodal scenarios, nothing of the harness's own. On the GPU
    tier, layouts that need more GPUs than this run's share are skipped, and so are CPU-tier
    tests (self-tests: their faults live in the CPU launcher)."""
    expression = config.getoption("markexpr") or ""
    named = marker_names(expression)
    per_change = "pre_merge" in named and "nightly" not in named
    keep, drop = [], []
    for item in items:
        if not scope.is_marked_own(item):  # another suite's item: as it is
            keep.append(item)
            continue
        _skip_what_cannot_run(item, config)
        is_selftest = item.get_closest_marker("selftest") is not None
        nightly = item.get_closest_marker("nightly") is not None
        harness_test = item.get_closest_marker(HARNESS_TESTS) is not None
        if (
            (expression and is_selftest and not named & {"selftest", "long"})
            or (expression and harness_test and not named & NAMES_HARNESS_TESTS)
            or (not expression and nightly)
            or (per_change and nightly)
            or (_opt_in(item) and "cuda_rehearsal" not in named)
        ):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


HARNESS_TESTS = "harness_tests"  # the harness's tests of itself (the checkout's tests/)
# An -m naming one of these lets the harness's own tests in (where the expression selects them).
NAMES_HARNESS_TESTS = frozenset({"selftest", "nightly", "long", "unit", "process", HARNESS_TESTS})


def marker_names(expression: str) -> set[str]:
    """The marker names an -m expression mentions (its words but and/or/not)."""
    return set(re.findall(r"[A-Za-z_][\w-]*", expression)) - {"and", "or", "not"}


def _opt_in(item: pytest.Item) -> bool:
    """A test of a cost of its own, run only when -m names its marker (the CUDA rehearsal)."""
    return item.get_closest_marker("cuda_rehearsal") is not None


def _skip_what_cannot_run(item: pytest.Item, config: pytest.Config) -> None:
    if not chosen_tier(config).gpus:
        return
    if item.get_closest_marker("gpu_0") is not None:
        item.add_marker(
            pytest.mark.skip(reason="a CPU-tier test (fault injection or CPU-only start order)")
        )
        return
    scenario = item.callspec.params.get("scenario") if hasattr(item, "callspec") else None
    if isinstance(scenario, Scenario):
        share = config.stash[GPU_SHARE_KEY]
        reason = gpu_session.why_skipped(scenario, share, config.stash[GPU_MEMORY_KEY])
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


def topology_param(topology: Topology, *extra_marks: pytest.MarkDecorator) -> object:
    """A CPU-tier parameter for self-tests (their faults exist only in the CPU launcher)."""
    return pytest.param(topology, id=topology.name, marks=_cpu_marks(topology, *extra_marks))


def role_param(topology: Topology, role: str, representative: bool) -> object:
    """A self-test case for one worker of a topology (CPU tier): pre_merge when it is one of
    the representative cases, else nightly."""
    schedule = pytest.mark.pre_merge if representative else pytest.mark.nightly
    marks = _cpu_marks(topology, schedule, pytest.mark.timeout(240))
    if topology.cpu_nightly:  # ~20 s a case (the gateway's fresh children): the check is
        marks.append(pytest.mark.long)  # made on every other role, the topology nightly
    return pytest.param(topology, role, id=f"{topology.name}-{role}", marks=marks)


def _cpu_marks(topology: Topology, *extra: pytest.MarkDecorator) -> list[pytest.MarkDecorator]:
    marks = [getattr(pytest.mark, m) for m in topology.marks]
    marks += [pytest.mark.gpu_0, pytest.mark.timeout(topology.timeout_s), *_cpu_skip(topology)]
    if topology.cpu_nightly:
        marks.append(pytest.mark.nightly)
    return [*marks, *extra]


def _cpu_skip(topology: Topology) -> list[pytest.MarkDecorator]:
    """A topology that cannot run faithfully on the CPU tier is GPU-only, with its reason."""
    if topology.cpu_skip is None:
        return []
    return [pytest.mark.skip(reason=f"GPU-only: {topology.cpu_skip}")]
