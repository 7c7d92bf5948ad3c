"""Do two history runs read the same? Cell by cell, windows compared as windows.

A cell's verdict is deterministic (conformant, or the same violations on every run) or a
window (violations some runs saw and others did not: `stability` says "intermittent k/N").
Two histories agree on a cell when both are conformant, when both fail deterministically with
the same violation kinds, or when either saw a window and the other saw those kinds at most
(nothing, the same window, or the same kinds every time): a window is a rate, and two samples
of a rate may differ without the table flipping. Known violations are reported, not failed,
so a known one seen by one run only does not flip a cell either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from discovery_harness.history.record import ItemFindings
from discovery_harness.history.run import ReleaseRun

OK, SKIPPED = "ok", "-"


@dataclass(frozen=True)
class CellClass:
    """One cell reduced to what a reader acts on: its violation kinds and whether they are a
    window (seen on some runs only)."""

    kinds: frozenset[str]
    window: bool = False
    skipped: bool = False

    @classmethod
    def of(cls, item: ItemFindings | None) -> CellClass:
        if item is None or item.outcome == "skipped":
            return cls(frozenset(), skipped=True)
        if item.outcome == "passed":
            return cls(frozenset())
        kinds = frozenset(v["kind"] for v in item.violations) or frozenset({item.outcome})
        return cls(kinds, window=item.stability.startswith("intermittent"))

    def describe(self) -> str:
        if self.skipped:
            return SKIPPED
        if not self.kinds:
            return OK
        what = ", ".join(sorted(self.kinds))
        return f"window: {what}" if self.window else f"FAIL: {what}"


def agree(a: CellClass, b: CellClass) -> bool:
    if a.skipped or b.skipped:
        return a.skipped == b.skipped
    if a.kinds == b.kinds and a.window == b.window:
        return True
    if a.window or b.window:  # a rate sampled twice: the other saw these kinds at most
        window, other = (a, b) if a.window else (b, a)
        return other.kinds <= window.kinds or (window.kinds <= other.kinds and other.window)
    return False


@dataclass(frozen=True)
class Disagreement:
    release: str
    topology: str
    now: str
    before: str


def differences(
    now: Sequence[ReleaseRun], before: Sequence[ReleaseRun], topologies: Sequence[str]
) -> tuple[int, list[Disagreement]]:
    """(cells compared, cells that disagree) over the releases and topologies both ran."""
    earlier = {run.release: run for run in before}
    compared, found = 0, []
    for run in now:
        previous = earlier.get(run.release)
        if previous is None:
            continue
        for name in topologies:
            if name not in run.findings and name not in previous.findings:
                continue
            compared += 1
            a = CellClass.of(run.findings.get(name))
            b = CellClass.of(previous.findings.get(name))
            if not agree(a, b):
                found.append(Disagreement(run.release, name, a.describe(), b.describe()))
    return compared, found


def report(compared: int, found: list[Disagreement], against: str) -> str:
    """Markdown: the count, then each cell that flipped (none: the tables read the same)."""
    lines = [
        f"Against {against}: {compared - len(found)} of {compared} cells agree "
        "(windows compared as rates).",
    ]
    if found:
        lines += ["", "| release | topology | this run | that run |", "|---|---|---|---|"]
        lines += [f"| {d.release} | {d.topology} | {d.now} | {d.before} |" for d in found]
    return "\n".join(lines) + "\n"
