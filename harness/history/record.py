"""What one test item found, as JUnit properties: the history reads them back per release.

Each request's answer and each violation is one property, so a run's JUnit file alone says
what every topology did (a failed readiness included, when the run probes after failures).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from discovery_harness.model.violations import Violation
from discovery_harness.serving.requests import DECLARED, Reply

REQUEST, VIOLATION = "history.request", "history.violation"
# Which parts of the contract the item's verdict judged (history/parts.py), e.g.
# {"readiness": true, "canary": true, "lora": false, "bad_input": true}.
JUDGED = "history.judged"


def reply_properties(replies: Iterable[Reply]) -> list[tuple[str, str]]:
    return [
        (
            REQUEST,
            json.dumps(
                {"kind": r.kind, "shape": r.shape, "status": r.status, "ok": r.ok}
                | ({"purpose": r.purpose} if r.purpose != DECLARED else {})
            ),
        )
        for r in replies
    ]


def judged_property(judged: dict[str, bool]) -> tuple[str, str]:
    return JUDGED, json.dumps(judged)


def violation_properties(violations: Iterable[Violation]) -> list[tuple[str, str]]:
    return [
        (VIOLATION, json.dumps({"kind": v.kind, "role": v.role, "message": v.message}))
        for v in violations
    ]


@dataclass
class ItemFindings:
    """One test item of one release: its outcome, answers and violations."""

    outcome: str  # passed | failed | skipped | error
    reason: str = ""  # a skip's reason, or the first line of a failure
    requests: list[dict] = field(default_factory=list)
    violations: list[dict] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    # Re-runs of a failed item (history --runs): its label ("deterministic 2/2": some
    # violation seen on every run; "intermittent k/N": none was) and the runs' record
    # (history.stability.Stable, what compare reads); "" and {} for one run.
    stability: str = ""
    stable: dict = field(default_factory=dict)
    judged: dict[str, bool] = field(default_factory=dict)  # JUDGED; {} in older records

    def add(self, name: str, value: str) -> None:
        if name == REQUEST:
            self.requests.append(json.loads(value))
        elif name == VIOLATION:
            self.violations.append(json.loads(value))
        elif name == JUDGED:
            self.judged = json.loads(value)
