"""Report entries from what was observed: a deployment the harness ran (watch events, the
client's exchanges, its verdict) or one an audit judged."""

from __future__ import annotations

from discovery_harness.deployment.core import Deployment
from discovery_harness.deployment.timeline import first_answer
from discovery_harness.judge.discovered import AuditedDeployment
from discovery_harness.judge.verdict import Verdict
from discovery_harness.model.contract import ExpectedCard
from discovery_harness.model.records import ModelCard
from discovery_harness.model.violations import Violation
from discovery_harness.report.model import DeploymentEntry, Mark, WorkerEntry


def card_fields(card: ModelCard | ExpectedCard) -> dict[str, str]:
    needs = " | ".join("+".join(group) for group in card.needs) or "-"
    fields = {
        "model_type": card.model_type,
        "model_input": str(card.model_input),
        "worker_type": card.worker_type,
        "needs": needs,
    }
    if isinstance(card, ModelCard):
        fields["model_name"] = card.model_name
    else:
        fields["public"] = "yes" if card.public else "internal"
    return fields


def _violations(found: list[Violation], role: str | None = None) -> list[dict[str, str]]:
    return [{"kind": v.kind, "message": v.message} for v in found if v.role == role]


def _health_marks(deployment: Deployment, pid: int) -> list[Mark]:
    """Its /health: the first ready answer, and every change after it until it was stopped."""
    said = deployment.health.of(pid)
    if said is None or said.ready_at is None:
        return []
    marks = [Mark(said.ready_at, "ready", f"/health 200 ready ({said.url})")]
    for change in said.before_stop():
        if change.at > said.ready_at:
            marks.append(Mark(change.at, "health", f"/health now {change.describe()}"))
    return marks


def from_deployment(deployment: Deployment, test: str | None = None) -> DeploymentEntry:
    """The report's entry: each worker's registration marks (discovery_harness.deployment.timeline,
    as
    the JUnit timeline has them), the frontend's listing, refusals and first answer."""
    state = deployment.observer.state()
    found = list(deployment.found)
    failed_roles = {v.role for v in found if v.role}
    verdict_at = deployment.verdict_at
    marks = {row.role: row for row in deployment.timeline()}
    workers = []
    for worker in deployment.processes.workers:
        records = deployment.records(state, worker)
        row = marks[worker.role]
        events = [Mark(row.started, "process-start", f"pid {worker.pid}")]
        if row.instance_at is not None and row.instance_key is not None:
            events.append(Mark(row.instance_at, "serving", row.instance_key))
        if row.card_at is not None and row.card_key is not None:
            events.append(Mark(row.card_at, "card", row.card_key))
        events += _health_marks(deployment, worker.pid)
        mine = [v for v in found if v.role == worker.role]
        if mine and verdict_at:
            events.append(Mark(verdict_at, "violation", ", ".join(sorted({v.kind for v in mine}))))
        workers.append(
            WorkerEntry(
                role=worker.role,
                pid=worker.pid,
                start_path=", ".join(worker.spec.start_paths),
                component=worker.component,
                instance=records.generate.key if records.generate else None,
                expected=card_fields(worker.expected) if worker.expected else None,
                observed=card_fields(records.card) if records.card else None,
                events=events,
                violations=_violations(found, worker.role),
                log_path=str(worker.proc.log_path),
                log_tail=worker.proc.log_tail() if worker.role in failed_roles else "",
                failed=worker.role in failed_roles,
            )
        )
    frontend = []
    if deployment.listing.listed_at is not None:
        # What /ready said at that moment rides on the listed mark (one instant, one mark).
        when = deployment.listing.ready_when_listed
        ready = f"; then {when}" if when else ""
        frontend.append(Mark(deployment.listing.listed_at, "listed", f"GET /v1/models{ready}"))
    exchanges = list(deployment.client.exchanges)
    for exchange in exchanges:
        if exchange.status != 200:
            detail = f"{exchange.method} {exchange.path} -> {exchange.status}"
            frontend.append(Mark(exchange.wall_time, "answer", detail))
    answered = first_answer(exchanges)
    if answered is not None:
        detail = f"{answered.method} {answered.path} -> 200"
        frontend.append(Mark(answered.wall_time, "first-answer", detail))
    unnamed = [v for v in found if not v.role]
    if unnamed and verdict_at:
        frontend.append(Mark(verdict_at, "violation", ", ".join(sorted({v.kind for v in unnamed}))))
    verdict = Verdict(tuple(found), tuple(deployment.known_seen)).outcome
    return DeploymentEntry(
        name=test or deployment.plan.namespace,
        test=test,
        topology=deployment.plan.topology.name,
        namespace=deployment.plan.namespace,
        model=deployment.plan.model_name,
        verdict=verdict,
        started_at=min((w.events[0].at for w in workers), default=None),
        workers=workers,
        frontend=frontend,
        answers=[
            {"kind": r.kind, "status": r.status, "ok": r.ok, "problem": r.problem}
            for r in deployment.replies
        ],
        violations=[{"kind": v.kind, "role": v.role, "message": v.message} for v in found],
        known=[f"[{v.kind}] {reason}" for v, reason in deployment.known_seen],
    )


def from_audit(audited: AuditedDeployment) -> DeploymentEntry:
    violations = list(audited.verdict.violations)
    failed_roles = {v.role for v in violations if v.role}
    workers = []
    for worker in audited.workers:
        events = [Mark(worker.first_seen, "serving", worker.instance.key)]
        if worker.card is not None:
            events.append(Mark(worker.first_seen, "card", worker.card.key))
        workers.append(
            WorkerEntry(
                role=worker.role,
                pid=None,
                start_path="(not known from discovery)",
                component=worker.component,
                instance=worker.instance.key,
                expected=card_fields(worker.expected) if worker.expected else None,
                observed=card_fields(worker.card) if worker.card else None,
                events=events,
                violations=_violations(violations, worker.role),
                failed=worker.role in failed_roles,
            )
        )
    return DeploymentEntry(
        name=f"{audited.namespace}/{audited.model or '-'}",
        topology=audited.topology,
        namespace=audited.namespace,
        model=audited.model,
        verdict=audited.verdict.outcome,
        workers=workers,
        violations=[{"kind": v.kind, "role": v.role, "message": v.message} for v in violations],
    )
