"""Do two history runs read the same? Cell by cell, windows compared as windows.

A cell's verdict is deterministic (conformant, or failed on every run) or a window (some runs
saw nothing: its `Stable` record, the one rule history.stability holds; and the race kinds
below, windows by what they observe).
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
from discovery_harness.history.stability import Stable
from discovery_harness.model.violations import BAD_RESPONSE, LISTED_EARLY

OK, SKIPPED = "ok", "-"
# Observations of a window by what they are: the model listed before its topology can serve
# it, and an error answered to a listed model in that time (findings 1, 6, 7). A run may see
# one, the other or both on every try of a cell and the next run neither: they are compared
# as windows even where every run of a cell saw them.
RACES = frozenset({LISTED_EARLY, BAD_RESPONSE})


@dataclass(frozen=True)
class CellClass:
    """One cell reduced to what a reader acts on: its violation kinds and whether they are a
    window (seen on some runs only)."""

    kinds: frozenset[str]
    window: bool = False
    skipped: bool = False
    races: frozenset[str] = frozenset()  # window observations beside deterministic kinds

    @classmethod
    def of(cls, item: ItemFindings | None) -> CellClass:
        if item is None or item.outcome == "skipped":
            return cls(frozenset(), skipped=True)
        if item.outcome == "passed":
            return cls(frozenset())
        kinds = frozenset(v["kind"] for v in item.violations) or frozenset({item.outcome})
        if item.stable and Stable.from_record(item.stable).window:
            return cls(kinds, window=True)
        # Every run failed (deterministic, or intermittent N/N: the runs saw different sets,
        # which the race kinds make so): the other kinds are taken as steady.
        steady = kinds - RACES
        return cls(steady, window=False, races=kinds & RACES)

    def describe(self) -> str:
        if self.skipped:
            return SKIPPED
        races = f"window: {', '.join(sorted(self.races))}" if self.races else ""
        if not self.kinds:
            return races or OK
        what = ", ".join(sorted(self.kinds))
        if self.window:
            return f"window: {what}"
        return f"FAIL: {what}" + (f"; {races}" if races else "")


def agree(a: CellClass, b: CellClass) -> bool:
    """Skipped on both; else the same deterministic kinds (races aside), or a window on
    either side that covers what the other saw."""
    if a.skipped or b.skipped:
        return a.skipped == b.skipped
    if a.kinds == b.kinds and a.window == b.window:
        return True
    if a.window or b.window:  # a rate sampled twice: the other saw these kinds at most
        window, other = (a, b) if a.window else (b, a)
        seen, steady = window.kinds - RACES, other.kinds - RACES  # a race is a race
        return steady <= seen or (seen <= steady and other.window)
    return False


@dataclass(frozen=True)
class Disagreement:
    release: str
    topology: str
    now: str
    before: str


def _pairs(
    now: Sequence[ReleaseRun], before: Sequence[ReleaseRun]
) -> list[tuple[ReleaseRun, ReleaseRun]]:
    """Each release both runs hold: (this run's, the other's), in this run's order."""
    earlier = {run.release: run for run in before}
    return [(run, earlier[run.release]) for run in now if run.release in earlier]


def differences(
    now: Sequence[ReleaseRun], before: Sequence[ReleaseRun], topologies: Sequence[str]
) -> tuple[int, list[Disagreement]]:
    """(cells compared, cells that disagree) over the releases and topologies both ran."""
    compared, found = 0, []
    for run, previous in _pairs(now, before):
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


def _seen(cell: CellClass) -> frozenset[str]:
    return cell.kinds | cell.races


def merged_cell(a: ItemFindings | None, b: ItemFindings | None) -> str:
    """One cell as two runs read it together: the violations both saw deterministically, and
    the windows with how many of the two runs saw them; a flip says both sides."""
    ca, cb = CellClass.of(a), CellClass.of(b)
    if ca.skipped and cb.skipped:
        return SKIPPED
    if not agree(ca, cb):
        return f"FLIPS: {ca.describe()} / {cb.describe()}"
    steady = ca.kinds if not (ca.window or cb.window) else frozenset()
    windows = (_seen(ca) | _seen(cb)) - steady
    parts = [f"FAIL: {', '.join(sorted(steady))}"] if steady else []
    if windows:
        runs = sum(1 for cell in (ca, cb) if _seen(cell) & windows)
        parts.append(f"window ({runs}/2 runs): {', '.join(sorted(windows))}")
    return "; ".join(parts) or OK


def merged_matrix(
    now: Sequence[ReleaseRun], before: Sequence[ReleaseRun], topologies: Sequence[str]
) -> str:
    """Topology x release over the releases both runs hold, each cell as merged_cell says."""
    pairs = _pairs(now, before)
    names = [t for t in topologies if any(t in a.findings or t in b.findings for a, b in pairs)]
    lines = [
        "| topology | " + " | ".join(a.release for a, _ in pairs) + " |",
        "|---|" + "---|" * len(pairs),
    ]
    for name in names:
        cells = [merged_cell(a.findings.get(name), b.findings.get(name)) for a, b in pairs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
