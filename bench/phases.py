"""Where a deployment's time goes, phase by phase, read from the harness's own marks.

The marks are the registration timeline's (discovery_harness.deployment.timeline: a worker's
process start, its generate instance's and its card's first puts, its /health first ready,
the model first listed, the first answer): the benchmark does not time them again, it only
reads them against the moment the deployment was asked to start. Added here are what the
timeline has no mark for: a LoRA loaded and unloaded (until every worker's LoRA card came /
went, as the LoRA checks wait) and the deployment's stop (SIGTERM until every process it
started is gone).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

from bench.results import Results
from discovery_harness.deployment import Deployment
from discovery_harness.deployment.lora import LoraControl

LORA_NAME = "bench-lora"
HEADER = (
    "topology",
    "forked",
    "instance",
    "card",
    "ready",
    "listed",
    "first answer",
    "LoRA load",
    "LoRA unload",
    "stop",
)


@dataclass(frozen=True)
class Phases:
    """Seconds since the deployment was asked to start (forked ... first answer: the slowest
    worker's mark), and the durations of a LoRA load, an unload and the stop. None: no such
    phase for this topology (no LoRA, no public model) or not measured."""

    forked: float | None = None  # the last worker's process started (fork or exec)
    instance: float | None = None  # the last generate instance key first put
    card: float | None = None  # the last model card first put
    ready: float | None = None  # the last worker's /health first ready
    listed: float | None = None  # the public model first in GET /v1/models
    first_answer: float | None = None  # the first request answered 200
    lora_load: float | None = None
    lora_unload: float | None = None
    stop: float | None = None


def marks(deployment: Deployment, started_wall: float) -> Phases:
    """The timeline's marks, as seconds since `started_wall` (wall time of Deployment.start)."""
    rows = deployment.timeline()

    def latest(stamps: Sequence[float | None]) -> float | None:
        known = [s for s in stamps if s is not None]
        return round(max(known) - started_wall, 3) if known else None

    return Phases(
        forked=latest([r.started for r in rows]),
        instance=latest([r.instance_at for r in rows]),
        card=latest([r.card_at for r in rows]),
        ready=latest([r.ready_at for r in rows]),
        listed=latest([r.listed_at for r in rows]),
        first_answer=latest([r.first_ok_at for r in rows]),
    )


def with_lora(deployment: Deployment, phases: Phases) -> Phases:
    """A LoRA loaded into every registering worker and unloaded again, each timed until its
    cards settled and checked as the LoRA test checks them (a refusal or a wrong card raises)."""
    if "lora" not in deployment.plan.topology.assets:
        return phases
    control = LoraControl(deployment)
    started = time.monotonic()
    control.load(LORA_NAME)
    control.check_answers()
    control.settle(LORA_NAME, loaded=True)
    loaded = time.monotonic()
    control.unload(LORA_NAME)
    control.check_answers()
    control.settle(LORA_NAME, loaded=False)
    done = time.monotonic()
    return replace(
        phases, lora_load=round(loaded - started, 3), lora_unload=round(done - loaded, 3)
    )


def timed_stop(deployment: Deployment, into: list[float]) -> Callable[[], None]:
    """deployment.stop, appending its duration to `into` (it runs in the background: the
    session's BackgroundStops)."""

    def stop() -> None:
        started = time.monotonic()
        deployment.stop()
        into.append(round(time.monotonic() - started, 3))

    return stop


def median(runs: Sequence[Phases]) -> Phases:
    """Each phase's median over the runs that have it."""

    def of(name: str) -> float | None:
        values = [getattr(r, name) for r in runs if getattr(r, name) is not None]
        return round(statistics.median(values), 3) if values else None

    return Phases(**{f.name: of(f.name) for f in fields(Phases)})


def cell(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def write_table(results: Results, rows: Sequence[tuple[str, Phases]]) -> None:
    results.table(HEADER)
    for name, phases in rows:
        results.row(name, *(cell(getattr(phases, f.name)) for f in fields(Phases)))
