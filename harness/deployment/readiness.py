"""Readiness: wait on discovery events until every worker registered as declared (or the card
grace, a deadline or an exit decides otherwise), then until the frontend lists the model and
serves a request. What it finds is judged by harness.judge; this module only waits and
observes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.common.deadline import Deadline
from harness.deployment import diagnosis
from harness.deployment.options import LATE
from harness.deployment.progress import LogMilestones
from harness.deployment.worker import Worker
from harness.discovery.observer import DiscoveryState
from harness.judge import deployment as judged
from harness.judge.deployment import NOT_READY_STATUSES
from harness.model.violations import (
    BAD_RESPONSE,
    NEVER_LISTED,
    NEVER_REGISTERED,
    WORKER_EXITED,
    Violation,
)
from harness.processes.managed import without_colours
from harness.serving.requests import Reply

if TYPE_CHECKING:
    from harness.deployment.core import Deployment


def ready_violations(deployment: Deployment) -> list[Violation]:
    """Everything readiness found, known violations included (the deployment sets those
    aside)."""
    violations = await_registration(deployment) + deployment.not_started
    await_absent_settled(deployment)
    if deployment.frontend_mode == LATE and not violations:
        deployment.start_frontend()  # workers first: it must discover what is already there
    state = deployment.observer.state()
    violations += judged.card_violations(
        state, deployment.namespace, deployment.model_name, deployment.workers, deployment.strays
    )
    if not any(v.kind in (NEVER_REGISTERED, WORKER_EXITED) for v in violations):
        violations += await_listing(deployment)
    else:
        violations += listed_early(deployment, [])  # listed although a worker never registered
    found_exits = [v for v in violations if v.kind == WORKER_EXITED]
    violations += [
        diagnosis.exited(
            w, deployment.observer.state(), deployment.namespace, "readiness (it had registered)"
        )
        for w in deployment.workers
        if not w.proc.alive() and not any(v.role == w.role for v in found_exits)
    ]
    return violations


def await_registration(deployment: Deployment) -> list[Violation]:
    settings = deployment.session.settings
    deadline = deployment.deadline
    observer = deployment.observer
    serving_since: dict[str, float] = {}

    def dead_worker() -> None:
        for worker in deployment.workers:
            if not worker.proc.alive():
                raise Exited(worker)

    registering = [w for w in deployment.workers if w.registers]

    def probe(state: DiscoveryState) -> _Verdict | None:
        records = {w.role: deployment.records(state, w) for w in registering}
        if all(r.registered for r in records.values()):
            return _Verdict([])
        if all(r.serving for r in records.values()):
            now = time.monotonic()
            overdue = []
            for worker in registering:
                if not records[worker.role].registered:
                    since = serving_since.setdefault(worker.role, now)
                    if now - since > settings.card_grace:
                        overdue.append(worker)
            return _Verdict(overdue) if overdue else None
        return None

    try:
        verdict = observer.wait_for(probe, deadline, guard=dead_worker)
    except Exited as exited:
        return [
            diagnosis.exited(
                exited.worker, deployment.observer.state(), deployment.namespace, "its model card"
            )
        ]
    if verdict is not None and not verdict.overdue:
        return []
    state = observer.state()
    missing = (
        verdict.overdue
        if verdict
        else [w for w in registering if not deployment.records(state, w).registered]
    )
    waited = (
        f"{settings.card_grace:.0f} s after every peer was serving"
        if verdict
        else f"{deadline.seconds:.0f} s"
    )
    return [
        diagnosis.never_registered(
            w, deployment.records(state, w), state, deployment.namespace, waited
        )
        for w in missing
    ]


def await_absent_settled(deployment: Deployment) -> None:
    """Workers that must not register get the time to show it: until each has logged its
    stay-out line, written keys anyway (a violation the card checks report), or exited;
    at most the card grace."""
    absent = [w for w in deployment.workers if w.expected is None]
    if not absent:
        return
    logs = {w.role: LogMilestones.matching(w.proc.log_path, w.spec.stays_out_log) for w in absent}

    def settled(state: DiscoveryState) -> bool:
        return all(
            deployment.records(state, w).instances
            or not w.proc.alive()
            or (logs[w.role] is not None and logs[w.role].poll())
            for w in absent
        )

    grace = min(deployment.session.settings.card_grace, deployment.deadline.remaining)
    deployment.observer.wait_for(settled, Deadline(grace))


def await_listing(deployment: Deployment) -> list[Violation]:
    """Listed in /v1/models, then a real request of the topology's first kind answered
    200 (readiness is a served request, not an open port or a listing)."""
    if not deployment.topology.public_workers:
        return []
    deadline = Deadline(deployment.session.settings.list_deadline)
    public_role = deployment.topology.public_workers[0].role
    if not deployment.listing.wait(deadline):
        deployment.listing.stop()
        probe = deployment.send_unrecorded(deployment.topology.requests[0])
        return [
            Violation(
                NEVER_LISTED,
                public_role,
                f"model '{deployment.model_name}' never appeared in GET /v1/models within "
                f"{deadline.seconds:.0f} s of every worker registering; a "
                f"{probe.kind} request got {probe.status}: {probe.body[:300]}\n"
                f"{diagnosis.keys_summary(deployment.observer.state(), deployment.namespace)}",
            )
        ]
    probes = probe_until_served(deployment, deadline)
    found = listed_early(deployment, probes)
    if not probes or probes[-1].status != 200:
        last = probes[-1] if probes else None
        found.append(
            Violation(
                BAD_RESPONSE,
                public_role,
                f"model '{deployment.model_name}' is listed but never served a "
                f"{deployment.topology.requests[0]} request within {deadline.seconds:.0f} s; "
                "last answer: "
                f"{last.describe() if last else 'none'}",
            )
        )
    return found


def probe_until_served(deployment: Deployment, deadline: Deadline) -> list[Reply]:
    probes: list[Reply] = []
    guard = deployment.workers[0].proc
    while not deadline.expired:
        probes.append(deployment.send_unrecorded(deployment.topology.requests[0]))
        # 404 and 503 say "not ready yet"; anything else is the answer.
        if probes[-1].status not in NOT_READY_STATUSES:
            break
        if not all(w.proc.alive() for w in deployment.workers):
            break
        guard.popen_wait(deadline.slice(0.1))
    return probes


def listed_early(deployment: Deployment, probes: list[Reply]) -> list[Violation]:
    missing = set(deployment.listing.missing_when_listed)
    present = [
        w.expected for w in deployment.workers if w.expected is not None and w.role not in missing
    ]
    refused = any(p.status in NOT_READY_STATUSES for p in probes)
    return judged.listed_early(
        deployment.model_name,
        deployment.listing.missing_when_listed,
        deployment.listing.ready_when_listed,
        present,
        probes,
        frontend_log_tail(deployment) if refused else "",
    )


def frontend_log_tail(deployment: Deployment, lines: int = 15) -> str:
    """The last lines the frontend wrote since this deployment started: its own reason
    for a refusal (a transient window is gone by the time anyone reads a CI log)."""
    written = (
        deployment.frontend.log_since(deployment.frontend_log_offset) if deployment.frontend else ""
    )
    tail = without_colours(written).strip().splitlines()[-lines:]
    return "\n".join(f"  {line}" for line in tail) if tail else "  (nothing)"


@dataclass
class _Verdict:
    overdue: list[Worker]


class Exited(Exception):
    """A worker exited while the deployment waited on it."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
