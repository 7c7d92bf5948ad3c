"""The evidence of a deployment's failed answers (harness/judge/answer_evidence.py), put
under the violations about answers: the frontend's lines for each request, its routing
changes just before, the worker that served it (role, pid, from etcd) and that worker's
errors. A violation's line stays as it is (a known violation's too): the cause goes in its
evidence."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from discovery_harness.deployment.frontend_log import FrontendLogWindow
from discovery_harness.deployment.roster import Roster
from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge.answer_evidence import ServingWorker, render_all
from discovery_harness.model.violations import (
    BAD_CONTENT,
    BAD_INPUT_ANSWER,
    BAD_RESPONSE,
    LISTED_EARLY,
    STATUS_503,
    Violation,
)
from discovery_harness.processes.managed import without_colours
from discovery_harness.serving.http_client import Exchange
from discovery_harness.serving.requests import Reply

ANSWER_KINDS = (STATUS_503, BAD_RESPONSE, BAD_CONTENT, BAD_INPUT_ANSWER, LISTED_EARLY)
NOT_FOUND_YET = (404, 503)  # a listed model "not found" or "not ready": listed too early


def _about(kind: str, exchange: Exchange) -> bool:
    """Whether a failed answer belongs under a violation of `kind`."""
    if kind == BAD_INPUT_ANSWER:
        return exchange.bad_input
    if exchange.bad_input:
        return False
    if kind == STATUS_503:
        return exchange.status == 503
    if kind == BAD_CONTENT:
        return exchange.status == 200
    if kind == LISTED_EARLY:  # refused before ready: 404/503, or an error while incomplete
        return exchange.status in NOT_FOUND_YET or (
            exchange.status >= 500 and not exchange.after_ready
        )
    return exchange.status >= 400 and exchange.status != 503


def with_evidence(
    violations: list[Violation],
    failed: Sequence[Exchange],
    frontend_log: FrontendLogWindow,
    roster: Roster,
    state: DiscoveryState,
) -> list[Violation]:
    """`violations`, each about answers with the cause of its `failed` answers (a 503
    violation: the 503s, another: the rest) as evidence. The frontend's log is read only
    here, where an answer failed: the deployment's window of it (each request's lines are
    found by its own id)."""
    frontend = frontend_log.holder.frontend
    if not failed or frontend is None or not any(v.kind in ANSWER_KINDS for v in violations):
        return violations
    frontend_lines = without_colours(frontend_log.text()).splitlines()
    frontend_path = frontend.proc.log_path
    workers = serving_workers(roster, state)
    found, shown = [], set()
    for violation in violations:
        if violation.kind not in ANSWER_KINDS or violation.kind in shown:
            found.append(violation)
            continue
        # A violation that says when (each answer's time) is about those answers only.
        mine = [
            e
            for e in failed
            if _about(violation.kind, e) and (not violation.at or e.wall_time in violation.at)
        ]
        if not mine:
            found.append(violation)
            continue
        cause = render_all(mine, frontend_lines, workers, frontend_path)
        evidence = "\n".join(part for part in (violation.evidence, cause) if part)
        found.append(dataclasses.replace(violation, evidence=evidence))
        if not violation.at:
            shown.add(violation.kind)  # once per kind: the next of its kind would repeat it
    return found


def serving_workers(roster: Roster, state: DiscoveryState) -> list[ServingWorker]:
    """Each worker with its instance ids in etcd (what the frontend's worker_id names)."""
    workers = []
    for worker in roster.workers:
        records = roster.records(state, worker)
        workers.append(
            ServingWorker(
                role=worker.role,
                pid=worker.pid,
                instance_ids=frozenset(i.instance_id for i in records.instances),
                log_lines=tuple(without_colours(worker.proc.log_text()).splitlines()),
                log_path=worker.proc.log_path,
            )
        )
    return workers


def failed_after_ready(exchanges: Sequence[Exchange], replies: Sequence[Reply]) -> list[Exchange]:
    """Every error answer after readiness (of a bad input, a 5xx only: its 4xx is right), and
    every 200 whose answer was judged wrong (a bad input's: accepted)."""
    wrong_200 = {r.request_id for r in replies if r.status == 200 and not r.ok and r.request_id}
    return [
        e
        for e in exchanges
        if e.after_ready
        and (e.status >= (500 if e.bad_input else 400) or e.request_id in wrong_200)
    ]


def last_failed_probe(exchanges: Sequence[Exchange]) -> list[Exchange]:
    """The last failed answer before readiness (what "never served" quotes)."""
    return [e for e in exchanges if not e.after_ready and e.status >= 400][-1:]
