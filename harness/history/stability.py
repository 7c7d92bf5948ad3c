"""Is a verdict deterministic? The same judgement run again, a few times, adaptively.

A race (a model listed before its topology completes, finding 6's window) shows in one run
and not the next; a bisect or a history cell that takes one run's word for it names the
wrong commit or flips between runs. A non-conformant judgement is re-run up to N times
(N small; it stops once two runs agree): a violation seen on every run is deterministic,
one seen on some runs only is intermittent, with its rate (k/N).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from discovery_harness.history.record import ItemFindings

CONFORMANT, DETERMINISTIC, INTERMITTENT = "conformant", "deterministic", "intermittent"
DEFAULT_RUNS = 3


@dataclass(frozen=True)
class Stable:
    """What N runs of one judgement found: each violation (a short key such as
    "mm-encode-pd: never-registered mm-worker") with the number of runs that saw it, and how
    many runs saw any. The one rule bisect, history and compare read a verdict's stability
    by: deterministic when some violation was seen on every run, intermittent otherwise."""

    runs: int
    seen: dict[str, int] = field(default_factory=dict)
    failed: int = 0  # runs that saw any violation

    @classmethod
    def of(cls, runs: Sequence[frozenset[str]]) -> Stable:
        seen: dict[str, int] = {}
        for found in runs:
            for key in found:
                seen[key] = seen.get(key, 0) + 1
        return cls(len(runs), seen, sum(1 for found in runs if found))

    @property
    def steady(self) -> frozenset[str]:
        """The violations every run saw: the verdict's deterministic part."""
        return frozenset(k for k, n in self.seen.items() if n == self.runs)

    @property
    def flickering(self) -> dict[str, int]:
        return {k: n for k, n in self.seen.items() if n < self.runs}

    @property
    def outcome(self) -> str:
        if not self.seen:
            return CONFORMANT
        return DETERMINISTIC if self.steady else INTERMITTENT

    @property
    def window(self) -> bool:
        """Some run saw nothing: a rate, not a verdict (two samples of it may differ)."""
        return 0 < self.failed < self.runs

    @property
    def label(self) -> str:
        """"deterministic 3/3", "intermittent 1/3": the outcome and the runs that failed."""
        return f"{self.outcome} {self.failed}/{self.runs}"

    def record(self) -> dict[str, object]:
        """As a history's JSON keeps it (read back by `from_record`)."""
        return {"runs": self.runs, "seen": dict(self.seen), "failed": self.failed}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Stable:
        return cls(int(record["runs"]), dict(record["seen"]), int(record["failed"]))

    def describe(self) -> str:
        if not self.seen:
            return f"conformant ({self.runs} run{'s' if self.runs > 1 else ''})"
        parts = []
        if self.steady:
            parts.append(
                f"{'; '.join(sorted(self.steady))} (deterministic, {self.runs}/{self.runs})"
            )
        parts += [f"{k} (intermittent {n}/{self.runs})" for k, n in sorted(self.flickering.items())]
        return "; ".join(parts)


def judge_stably(once: Callable[[], frozenset[str]], most: int = DEFAULT_RUNS) -> Stable:
    """Run `once` (one judgement: the violations it saw; empty when conformant): again while
    it is non-conformant and the runs disagree, up to `most` runs in all."""
    runs = [once()]
    while more_runs_needed(runs, most):
        runs.append(once())
    return Stable.of(runs)


def more_runs_needed(runs: Sequence[frozenset[str]], most: int) -> bool:
    """The one re-run rule: a failed judgement runs again until two runs agree, `most` in all."""
    if not runs or len(runs) >= most or not runs[0]:
        return False
    return len(runs) < 2 or runs[0] != runs[1]


def finding_keys(topology: str, item: ItemFindings) -> frozenset[str]:
    """One short key per violation of a failed item ("topology: kind role"); a failed item
    with none, its outcome and first line; nothing for a passed or skipped one."""
    if item.outcome in ("passed", "skipped"):
        return frozenset()
    found = {f"{topology}: {v['kind']} {v.get('role') or ''}".strip() for v in item.violations}
    return frozenset(found or {f"{topology}: {item.outcome} ({item.reason[:120]})"})
