"""Is a verdict deterministic? The same judgement run again, a few times, adaptively.

A race (a model listed before its topology completes, finding 6's window) shows in one run
and not the next; a bisect or a history cell that takes one run's word for it names the
wrong commit or flips between runs. A non-conformant judgement is re-run up to N times
(N small; it stops once two runs agree): a violation seen on every run is deterministic,
one seen on some runs only is intermittent, with its rate (k/N).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from discovery_harness.history.record import ItemFindings

CONFORMANT, DETERMINISTIC, INTERMITTENT = "conformant", "deterministic", "intermittent"
DEFAULT_RUNS = 3


@dataclass(frozen=True)
class Stable:
    """What N runs of one judgement found: each violation (a short key such as
    "mm-encode-pd: never-registered mm-worker") with the number of runs that saw it."""

    runs: int
    seen: dict[str, int] = field(default_factory=dict)

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
    if runs[0] and most > 1:
        runs.append(once())
        if runs[1] != runs[0]:
            while len(runs) < most:
                runs.append(once())
    seen: dict[str, int] = {}
    for found in runs:
        for key in found:
            seen[key] = seen.get(key, 0) + 1
    return Stable(len(runs), seen)


def finding_keys(topology: str, item: ItemFindings) -> frozenset[str]:
    """One short key per violation of a failed item ("topology: kind role"); a failed item
    with none, its outcome and first line; nothing for a passed or skipped one."""
    if item.outcome in ("passed", "skipped"):
        return frozenset()
    found = {f"{topology}: {v['kind']} {v.get('role') or ''}".strip() for v in item.violations}
    return frozenset(found or {f"{topology}: {item.outcome} ({item.reason[:120]})"})


def rate(runs: list[frozenset[str]]) -> str:
    """A failed item's stability over its runs: deterministic when every run saw its first
    run's violations, else intermittent with how many runs failed."""
    failed = sum(1 for keys in runs if keys)
    if all(keys == runs[0] for keys in runs):
        return f"deterministic {failed}/{len(runs)}"
    return f"intermittent {failed}/{len(runs)}"
