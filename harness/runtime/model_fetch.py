"""`python -m discovery_harness models fetch|list -m EXPR [--dry-run]`: exactly the models a
GPU-tier
run with that marker expression would use, with their sizes.

The selection is pytest's own: a collect-only session of the GPU tier with `-m EXPR` (the
plugin parametrizes one item per layout, marks it gpu_N and nightly, and deselects as a run
would), then the layouts this machine's GPUs can take (count, memory). So a job fetches what
it runs and nothing else: not the nightly diffusion models in the every-change job, not a
56 GiB model on a 24 GiB runner.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from discovery_harness.model.catalogue import DEFAULT_CATALOGUE, Catalogue
from discovery_harness.model.topology import Scenario
from discovery_harness.runtime import gpu_session, gpus

if TYPE_CHECKING:
    import pytest
from discovery_harness.runtime.models import (
    ModelNeed,
    apply_overrides,
    fetched_whole,
    hf_hub_cache,
    locate,
)


class _Collector:
    def __init__(self) -> None:
        self.scenarios: list[Scenario] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            scenario = item.callspec.params.get("scenario") if hasattr(item, "callspec") else None
            if isinstance(scenario, Scenario):
                self.scenarios.append(scenario)


def scenarios_dir() -> str:
    """Where the catalogue's scenario tests live: beside the catalogue module."""
    import importlib.util

    spec = importlib.util.find_spec(os.environ.get("HARNESS_CATALOGUE", DEFAULT_CATALOGUE))
    if spec is None or spec.origin is None:
        raise ValueError("the topology catalogue module is not importable")
    return os.path.dirname(spec.origin)


def selected_scenarios(expression: str, root: str | None = None) -> list[Scenario]:
    """The GPU-tier scenarios `pytest ROOT -m EXPRESSION --tier gpu` collects."""
    import pytest

    root = root or scenarios_dir()

    collector = _Collector()
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "--tier", "gpu", "-m", expression]
    # From the project's root, where its pytest configuration and conftest are found.
    project, tests = os.path.split(os.path.abspath(root))
    with contextlib.chdir(project), contextlib.redirect_stdout(io.StringIO()) as out:
        code = pytest.main([*args, tests], plugins=[collector])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise ValueError(f"collecting -m {expression!r} failed ({code}):\n{out.getvalue()}")
    return list(dict.fromkeys(collector.scenarios))


def runnable(
    scenarios: list[Scenario], gpu_count: int, memory_gib: float | None
) -> tuple[list[Scenario], list[str]]:
    """The scenarios a run on these GPUs deploys, and why each other one is skipped."""
    share = tuple(str(i) for i in range(gpu_count))
    memory = (memory_gib,) * gpu_count
    keep, skipped = [], []
    for scenario in scenarios:
        reason = gpu_session.why_skipped(scenario, share, memory)
        (skipped.append(reason) if reason else keep.append(scenario))
    return keep, skipped


def needs_of(scenarios: list[Scenario], catalogue: Catalogue, overrides: list[str]) -> list:
    refs = apply_overrides(catalogue.gpu_models, overrides)
    needs = {
        (s.topology.name, key, refs[key]): ModelNeed(s.topology.name, key, refs[key])
        for s in scenarios
        for key in s.topology.asset_keys
    }
    return list(needs.values())


@dataclass(frozen=True)
class Size:
    gib: float | None
    source: str  # "the Hub" or "catalogue estimate"

    def describe(self) -> str:
        if self.gib is None:
            return "size unknown"
        return f"{self.gib:.1f} GiB ({self.source})"


def model_size(ref: str, declared_gib: dict[str, float]) -> Size:
    """The repo's size from the Hub's metadata when reachable, else the catalogue's figure."""
    if not os.environ.get("HF_HUB_OFFLINE"):
        try:
            from huggingface_hub import HfApi

            info = HfApi().model_info(ref, files_metadata=True, timeout=10)
            total = sum(f.size or 0 for f in info.siblings or ())
            if total:
                return Size(total / 2**30, "the Hub")
        except Exception:  # no network, no such repo, no permission: fall back
            pass
    return model_size_declared(ref, declared_gib)


def model_size_declared(ref: str, declared_gib: dict[str, float]) -> Size:
    """The catalogue's figure alone (no network)."""
    declared = declared_gib.get(ref)
    return Size(declared, "catalogue estimate") if declared else Size(None, "")


def print_listing(needs: list[ModelNeed], catalogue: Catalogue, ask_hub: bool) -> int:
    """The one model listing (`models list`, with or without -m, and `fetch --dry-run`): per
    model its state, size, where it is and who needs it; returns how many are missing.
    available: fetched whole (or a local directory); partial: in the cache but not known
    whole (runs use it; fetch completes it); MISSING: a run would stop on it."""
    by_ref: dict[str, list[ModelNeed]] = {}
    for need in needs:
        by_ref.setdefault(need.ref, []).append(need)
    print(f"Hugging Face cache: {hf_hub_cache()}")
    to_fetch, missing = 0.0, 0
    for ref, users in by_ref.items():
        found, whole = locate(ref), fetched_whole(ref)
        sizes = catalogue.model_sizes_gib
        size = model_size(ref, sizes) if ask_hub else model_size_declared(ref, sizes)
        to_fetch += 0 if whole else size.gib or 0
        missing += found is None
        state = "available" if whole else ("partial" if found else "MISSING")
        who = ", ".join(sorted({f"{n.topology}/{n.key}" for n in users}))
        print(f"{state:<9}  {ref}: {size.describe()}, {found or 'not here'} ({who})")
    print(f"{len(by_ref)} model(s), {missing} missing; ~{to_fetch:.1f} GiB to fetch")
    if to_fetch:
        print(
            "to download them: python -m discovery_harness models fetch"
            " (with the same arguments)"
        )
    return missing


def models_command(catalogue: Catalogue, args: argparse.Namespace) -> int:
    """List or fetch the models of the runs `-m` selects (or of named topologies)."""
    from discovery_harness.runtime.model_source import gpu_needs
    from discovery_harness.runtime.models import MissingModels, fetch, require

    if args.marks is not None:
        selected = selected_scenarios(args.marks)
        visible = gpus.visible_gpus()
        # No GPU here (a cache prepared elsewhere): every layout on the GPUs it asks for.
        gpu_count = (
            args.gpus or len(visible) or max((s.placement.gpus for s in selected), default=1)
        )
        memory = args.gpu_memory
        if memory is None:
            known = gpus.total_memory_gib(visible[:gpu_count])
            memory = min(known.values()) if known else None
        chosen, skipped = runnable(selected, gpu_count, memory)
        needs = needs_of(chosen, catalogue, args.model)
        shown = f" of {memory:g} GiB" if memory else ""
        print(f"-m {args.marks!r} on {gpu_count} GPU(s){shown}: {len(chosen)} layout(s) to run")
        for reason in skipped:
            print(f"  not run here: {reason}")
    else:
        needs = gpu_needs(catalogue, args.topology or None, args.model)
    missing_refs = print_listing(needs, catalogue, ask_hub=True)
    if args.action == "list":
        return 1 if args.check and missing_refs else 0
    if args.dry_run:
        return 0
    fetch(needs)
    try:
        require(needs)
    except MissingModels as missing:
        print(missing, file=sys.stderr)
        return 1
    return 0
