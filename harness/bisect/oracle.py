"""The bisect's oracle: the harness's verdict on one commit of the checkout.

Each judgement is a conformance run in its own pytest process with `--dynamo-src` the
bisect's worktree at that commit (the run chooses the environment that fits, unless
--dynamo-env was given, and probes the pair's imports first). Its outcome is conformant,
deterministic (the same violations on every run), intermittent (a violation on k of N runs),
misfit (the checkout and the runtime do not fit: nothing to say about the code) or error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from discovery_harness.bisect.git import Commit
from discovery_harness.common import child
from discovery_harness.history.record import ItemFindings
from discovery_harness.history.run import Selection, read_junit, run_conformance
from discovery_harness.history.stability import (
    CONFORMANT,
    DETERMINISTIC,
    INTERMITTENT,
    Stable,
    finding_keys,
    judge_stably,
)
from discovery_harness.model.violations import MISFIT as MISFIT_KIND
from discovery_harness.model.violations import STAND_IN_FAILED
from discovery_harness.runtime import dynamo_src

MISFIT, ERROR = "misfit", "error"


@dataclass
class Judgement:
    commit: Commit
    outcome: str  # conformant | deterministic | intermittent | misfit | error
    seconds: float
    stable: Stable | None = None
    reason: str = ""  # a misfit's or an error's one line
    logs: list[str] = field(default_factory=list)

    @property
    def violations(self) -> frozenset[str]:
        """What the verdict rests on: the violations every run saw."""
        return self.stable.steady if self.stable else frozenset()

    def describe(self) -> str:
        if self.outcome in (MISFIT, ERROR):
            return f"{self.outcome}: {self.reason}"
        assert self.stable is not None
        return self.stable.describe()

    def as_dict(self) -> dict[str, object]:
        return {
            "commit": self.commit.hash,
            "subject": self.commit.subject,
            "date": self.commit.date,
            "outcome": self.outcome,
            "verdict": self.describe(),
            "violations": sorted(self.violations),
            "runs": self.stable.runs if self.stable else 0,
            "seen": dict(self.stable.seen) if self.stable else {},
            "seconds": round(self.seconds, 1),
            "logs": self.logs,
        }


class Unjudgeable(Exception):
    """One run could not judge the commit: the pair does not fit, or pytest gave no report."""

    def __init__(self, outcome: str, reason: str) -> None:
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason


def violation_keys(findings: dict[str, ItemFindings]) -> frozenset[str]:
    """One short key per violation ("topology: kind role"); a failed item with none, its
    outcome and first line. A misfit found at run time raises Unjudgeable."""
    keys: set[str] = set()
    for topology, item in findings.items():
        if item.outcome in ("passed", "skipped"):
            continue
        misfits = [v for v in item.violations if v.get("kind") == MISFIT_KIND]
        if misfits:
            raise Unjudgeable(MISFIT, str(misfits[0].get("message", "")).splitlines()[0])
        own = [v for v in item.violations if v.get("kind") == STAND_IN_FAILED]
        if own:  # the harness's stand-in failed: the commit cannot be judged by this run
            raise Unjudgeable(ERROR, str(own[0].get("message", "")).splitlines()[0])
        keys |= finding_keys(topology, item)
    return frozenset(keys)


def _misfit_line(log: Path) -> str | None:
    text = log.read_text(errors="replace") if log.exists() else ""
    for line in text.splitlines():
        if dynamo_src.MISFIT in line:
            return line.removeprefix("ERROR: ").strip()
    return None


@dataclass
class Oracle:
    """Judges the commit checked out in `worktree`; each run's files under `out_dir`."""

    worktree: Path
    selection: Selection
    out_dir: Path
    dynamo_env: str | None = None
    most_runs: int = 3
    runner: child.Runner | None = None  # None: the one child runner (common/child.py)
    counter: int = 0

    def _once(self, commit: Commit, logs: list[str]) -> frozenset[str]:
        self.counter += 1
        name = f"{self.counter:02d}-{commit.short}"
        junit, log = self.out_dir / f"{name}.xml", self.out_dir / f"{name}.log"
        logs.append(str(log))
        code = run_conformance(
            self.selection,
            self.dynamo_env,
            junit,
            self.out_dir / name,
            log,
            ["--dynamo-src", str(self.worktree)],
            popen=self.runner,
        )
        if not junit.exists():
            misfit = _misfit_line(log)
            if misfit:
                raise Unjudgeable(MISFIT, misfit)
            raise Unjudgeable(ERROR, f"pytest exited {code} without a report; see {log}")
        findings, _ = read_junit(junit)
        if not findings:
            raise Unjudgeable(ERROR, f"no conformance test ran; see {log}")
        return violation_keys(findings)

    def judge(self, commit: Commit) -> Judgement:
        started = time.monotonic()
        logs: list[str] = []
        try:
            stable = judge_stably(lambda: self._once(commit, logs), self.most_runs)
        except Unjudgeable as unfit:
            return Judgement(
                commit, unfit.outcome, time.monotonic() - started, reason=unfit.reason, logs=logs
            )
        outcome = {CONFORMANT: CONFORMANT, DETERMINISTIC: DETERMINISTIC}.get(
            stable.outcome, INTERMITTENT
        )
        return Judgement(commit, outcome, time.monotonic() - started, stable, logs=logs)
