"""Per dynamo.sglang start path, release by release: did its worker register as contracted?

A start path (`init_multimodal_worker`, ...) is what a Dynamo maintainer fixes; the catalogue
says which of each release's workers take it (its era's `start_paths`). Its cell for a release
is correct when every topology that ran it there shows no registration violation (and no
exit) for those workers; the first such release is where it first registered correctly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from discovery_harness.history.run import ReleaseRun
from discovery_harness.history.table import REGISTRATION_KINDS
from discovery_harness.model.catalogue import Catalogue
from discovery_harness.model.topology import UnsupportedRelease
from discovery_harness.model.violations import WORKER_EXITED

# A worker that died before registering did not register as contracted either.
BROKEN_REGISTRATION = REGISTRATION_KINDS | {WORKER_EXITED}
CORRECT, BROKEN = "ok", "BROKEN"


@dataclass
class StartPathRow:
    start_path: str
    cells: dict[str, str] = field(default_factory=dict)  # release -> ok / BROKEN (why) / ""

    @property
    def first_correct(self) -> str:
        return next((r for r, cell in self.cells.items() if cell == CORRECT), "never")


def _cell(problems: list[str]) -> str:
    return CORRECT if not problems else f"{BROKEN} ({'; '.join(sorted(set(problems)))})"


def rows(runs: Sequence[ReleaseRun], catalogue: Catalogue) -> list[StartPathRow]:
    """One row per start path any release's workers take, releases in the runs' order."""
    seen: dict[str, dict[str, list[str]]] = {}  # start path -> release -> problems
    names = {t.name for t in catalogue.topologies}
    for run in runs:
        for name, item in sorted(run.findings.items()):
            if item.outcome not in ("passed", "failed") or name not in names:
                continue
            try:
                topology = catalogue.topology(name).for_release(run.release)
            except UnsupportedRelease:
                continue
            for worker in topology.workers:
                problems = [
                    f"{name}: {v['kind']}"
                    for v in item.violations
                    if v.get("role") == worker.role and v["kind"] in BROKEN_REGISTRATION
                ]
                for path in worker.start_paths:
                    seen.setdefault(path, {}).setdefault(run.release, []).extend(problems)
    table = []
    for path in sorted(seen):
        row = StartPathRow(path)
        for run in runs:
            found = seen[path].get(run.release)
            row.cells[run.release] = "" if found is None else _cell(found)
        table.append(row)
    return table


def markdown(table: Sequence[StartPathRow], releases: Sequence[str]) -> str:
    lines = [
        "| start path | first registered correctly | " + " | ".join(releases) + " |",
        "|---|---|" + "---|" * len(releases),
    ]
    for row in table:
        cells = " | ".join(row.cells.get(r, "") or "-" for r in releases)
        lines.append(f"| {row.start_path} | {row.first_correct} | {cells} |")
    return "\n".join(lines) + "\n"
