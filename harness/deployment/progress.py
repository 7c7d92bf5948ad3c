"""Live start-up progress: per worker, what it is waiting for and for how long.

A GPU worker takes minutes to load weights and capture CUDA graphs; without a word on the
terminal that looks hung. While a deployment starts, a ticker thread samples each worker
(process alive, log milestones, its instance and card in the observer's etcd view) and the
deployment (model listed, first answer), and writes a line whenever a worker moves to its next
step, plus a "still waiting" line at a fixed interval. Lines go to a sink the pytest plugin
chooses (the terminal's stderr, which also reaches the terminal from xdist workers).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Steps of a worker's start, in order. "waiting to start" is a worker held back by the
# layout's start order; "exited" ends a worker's progress early.
WAITING, STARTED, SERVING, REGISTERED, LISTED, ANSWERED, EXITED = (
    "waiting to start",
    "process started",
    "serving (instance in etcd)",
    "registered (model card in etcd)",
    "listed in /v1/models",
    "first request answered",
    "exited",
)
STEPS = (WAITING, STARTED, SERVING, REGISTERED, LISTED, ANSWERED)

# Log lines that say where a start is between "process started" and "serving".
MILESTONES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), label)
    for pattern, label in (
        (r"Load weight begin", "loading weights"),
        (r"Load weight end", "weights loaded"),
        (r"KV Cache is allocated|Memory pool end", "KV cache allocated"),
        (r"Capture .*CUDA graph begin", "capturing CUDA graphs"),
        (r"Capture .*CUDA graph end", "CUDA graphs captured"),
        (r"Registering model with endpoint types", "registering its model"),
    )
)


@dataclass
class LogMilestones:
    """Reads a worker's log incrementally and keeps the latest milestone seen."""

    path: Path
    latest: str | None = None
    milestones: tuple[tuple[re.Pattern[str], str], ...] = MILESTONES
    _offset: int = 0
    _partial: str = ""

    @classmethod
    def matching(cls, path: Path, pattern: str | None) -> LogMilestones | None:
        """One milestone: `pattern` (None: nothing to look for)."""
        if pattern is None:
            return None
        return cls(path, milestones=((re.compile(pattern), pattern),))

    def poll(self) -> str | None:
        try:
            with open(self.path, "rb") as log:
                log.seek(self._offset)
                chunk = log.read()
        except FileNotFoundError:
            return self.latest
        self._offset += len(chunk)
        lines = (self._partial + chunk.decode(errors="replace")).split("\n")
        self._partial = lines.pop()
        for line in lines:
            for pattern, label in self.milestones:
                if pattern.search(line):
                    self.latest = label
        return self.latest


@dataclass(frozen=True)
class WorkerSample:
    """One worker at one moment."""

    role: str
    pid: int | None  # None: not started yet
    started: float | None  # monotonic start time
    alive: bool
    serving: bool
    registered: bool
    milestone: str | None = None
    waits_for: tuple[str, ...] = ()  # roles it starts after (start order)

    def step(self, listed: bool, answered: bool) -> str:
        if self.pid is None:
            return WAITING
        if not self.alive:
            return EXITED
        if self.registered and answered:
            return ANSWERED
        if self.registered and listed:
            return LISTED
        if self.registered:
            return REGISTERED
        return SERVING if self.serving else STARTED


@dataclass(frozen=True)
class Sample:
    workers: tuple[WorkerSample, ...]
    listed: bool = False
    answered: bool = False


@dataclass
class StartProgress:
    """Turns samples into lines: one per step a worker takes, and one every `heartbeat_s`
    naming every worker not yet done with what it is at and for how long."""

    label: str  # the deployment, e.g. "aggregated-1gpu h-aggregated-3f2a1b"
    say: Callable[[str], None]
    heartbeat_s: float = 30.0
    began: float = field(default_factory=time.monotonic)
    _seen: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    _since: dict[str, float] = field(default_factory=dict)
    _last_heartbeat: float | None = None

    def update(self, sample: Sample, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        for worker in sample.workers:
            step = worker.step(sample.listed, sample.answered)
            state = (step, worker.milestone if step == STARTED else None)
            previous = self._seen.get(worker.role)
            if previous == state:
                continue
            self._seen[worker.role] = state
            # Steps taken between two samples (instance and card land within milliseconds)
            # each get their line, in order.
            for passed in _steps_between(previous[0] if previous else None, step):
                self._since[worker.role] = now
                self.say(f"{self._prefix(now)} {self._describe(worker, passed, now)}")
            if previous and previous[0] == step:  # a new milestone within the same step
                self.say(f"{self._prefix(now)} {self._describe(worker, step, now)}")
        if self._last_heartbeat is None:
            self._last_heartbeat = now
        elif now - self._last_heartbeat >= self.heartbeat_s:
            self._last_heartbeat = now
            pending = [w for w in sample.workers if self._seen.get(w.role, ("",))[0] != ANSWERED]
            if pending:
                parts = [self._describe(w, self._seen[w.role][0], now) for w in pending]
                self.say(f"{self._prefix(now)} still starting: " + "; ".join(parts))

    def finish(self, outcome: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.say(f"{self._prefix(now)} {outcome}")

    def _prefix(self, now: float) -> str:
        return f"[harness {self.label} +{now - self.began:6.1f}s]"

    def _describe(self, worker: WorkerSample, step: str, now: float) -> str:
        who = worker.role if worker.pid is None else f"{worker.role} (pid {worker.pid})"
        text = f"{who}: {step}"
        if step == WAITING and worker.waits_for:
            text += f" after {', '.join(worker.waits_for)} serve"
        if step == STARTED and worker.milestone:
            text += f", {worker.milestone}"
        in_step = now - self._since.get(worker.role, now)
        if in_step >= 1.0:
            text += f" ({in_step:.0f} s in this step)"
        return text


def _steps_between(previous: str | None, step: str) -> list[str]:
    """The steps from just after `previous` up to `step`, or just `step` when it is not a
    step forward (a worker that exited, or a first sample)."""
    if previous is None and step in STEPS[1:]:
        previous = WAITING  # first seen already past the start: every step up to here
    if previous in STEPS and step in STEPS and STEPS.index(step) > STEPS.index(previous):
        start = max(STEPS.index(previous) + 1, STEPS.index(STARTED))
        return list(STEPS[start : STEPS.index(step) + 1])
    return [] if previous == step else [step]


class ProgressTicker:
    """Samples every `interval_s` on a daemon thread and feeds a StartProgress."""

    def __init__(
        self, progress: StartProgress, sample: Callable[[], Sample], interval_s: float = 0.5
    ) -> None:
        self.progress = progress
        self._sample = sample
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="start-progress", daemon=True)

    def start(self) -> ProgressTicker:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.progress.update(self._sample())
            self._stop.wait(self._interval_s)

    def stop(self, outcome: str) -> None:
        """Take a last sample, then say how the start ended."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self.progress.update(self._sample())
        self.progress.finish(outcome)
