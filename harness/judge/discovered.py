"""The verdict on whatever is in discovery: the audit's judge.

Input: discovery's state, when each key was first seen, the grace a serving instance gets to
publish its card, the catalogue's contracts and what the frontend answered (listing,
`/v1/models/{m}/ready`, probe requests). Output: one verdict per deployment (namespace,
model). The messages are the tests' own kinds; a process is named by its instance id and the
address it advertises, since its pid is not in discovery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge import checks
from discovery_harness.judge.frontend_readiness import audit_agreement, roles_by_type
from discovery_harness.judge.modes import FoundWorker, Recognition, recognise
from discovery_harness.judge.verdict import Verdict
from discovery_harness.model.contract import EMPTY, ExpectedCard
from discovery_harness.model.records import CARDS_PREFIX
from discovery_harness.model.topology import Topology
from discovery_harness.model.violations import (
    BAD_RESPONSE,
    LISTED_EARLY,
    NEEDS_UNMET,
    NEVER_LISTED,
    NEVER_REGISTERED,
    STATUS_503,
    Violation,
)
from discovery_harness.serving.http_client import Exchange
from discovery_harness.serving.requests import Reply

GENERATE = checks.GENERATE_ENDPOINT
INTERNAL_TYPES = {EMPTY, "Prefill"}  # model types the frontend does not advertise


@dataclass(frozen=True)
class FrontendView:
    """What the frontend answered; `listed` None: no frontend was given."""

    listed: frozenset[str] | None = None
    ready: Mapping[str, tuple[int, str]] = field(default_factory=dict)  # model -> answer
    answers: Mapping[str, Sequence[Reply]] = field(default_factory=dict)  # model -> probes
    health: Any = None  # GET /health's body (None: not asked)
    exchanges: Sequence[Exchange] = ()  # the probes as sent (their request ids, their times)


@dataclass
class AuditedDeployment:
    namespace: str
    model: str  # "" when no worker of the namespace has a card yet
    workers: list[FoundWorker]
    recognition: Recognition
    verdict: Verdict = field(default_factory=Verdict)
    frontend_checks: list[str] = field(default_factory=list)  # /ready, /health vs etcd

    @property
    def topology(self) -> str:
        found = self.recognition.topology
        return found.name if found else "unrecognised"


def discovered_workers(
    state: DiscoveryState, first_seen: Mapping[str, float]
) -> dict[str, list[FoundWorker]]:
    """Every serving process (a generate instance) by namespace, with its base-model card."""
    cards = {
        (c.namespace, c.component, c.endpoint, c.instance_id): c
        for c in state.cards()
        if c.lora_name is None
    }
    found: dict[str, list[FoundWorker]] = {}
    for instance in state.instances():
        if instance.endpoint != GENERATE:
            continue
        key = (instance.namespace, instance.component, instance.endpoint, instance.instance_id)
        seen = first_seen.get(instance.key, 0.0)
        found.setdefault(instance.namespace, []).append(FoundWorker(instance, cards.get(key), seen))
    return found


def pending(
    state: DiscoveryState, first_seen: Mapping[str, float], now: float, grace: float
) -> bool:
    """Whether some instance still lacks its card (or some card its instance) within the
    grace: the verdict is not known yet."""
    for workers in discovered_workers(state, first_seen).values():
        if any(w.card is None and now - w.first_seen < grace for w in workers):
            return True
    live = {(i.namespace, i.component, i.endpoint, i.instance_id) for i in state.instances()}
    return any(
        (c.namespace, c.component, c.endpoint, c.instance_id) not in live
        and now - first_seen.get(c.key, 0.0) < grace
        for c in state.cards()
    )


def judge_discovery(
    state: DiscoveryState,
    first_seen: Mapping[str, float],
    now: float,
    grace: float,
    topologies: Sequence[Topology],
    frontend: FrontendView,
    namespace: str | None = None,
) -> list[AuditedDeployment]:
    """One verdict per (namespace, model) in discovery (or in `namespace` alone)."""
    audited = []
    by_namespace = discovered_workers(state, first_seen)
    namespaces = set(by_namespace) | {c.namespace for c in state.cards()}
    for ns in sorted(namespaces):
        if namespace is not None and ns != namespace:
            continue
        orphans = _orphans(state, ns, first_seen, now, grace)
        groups = _by_model(by_namespace.get(ns, [])) or {"": []}
        for model, workers in groups.items():
            deployment = AuditedDeployment(ns, model, workers, recognise(workers, topologies))
            violations = _deployment_violations(deployment, grace, now, frontend)
            violations += _agreement(state, deployment, frontend)
            deployment.verdict = Verdict(tuple(violations + orphans))
            orphans = []  # reported once, with the namespace's first deployment
            audited.append(deployment)
    return audited


def _agreement(
    state: DiscoveryState, deployment: AuditedDeployment, frontend: FrontendView
) -> list[Violation]:
    """The frontend's /ready and /health against etcd (see judge.frontend_readiness)."""
    if frontend.listed is None:
        return []
    cards = [w.card for w in deployment.workers if w.card is not None]
    roles = roles_by_type(cards, {w.card.key: w.role for w in deployment.workers if w.card})
    found, deployment.frontend_checks = audit_agreement(
        state,
        deployment.namespace,
        deployment.model,
        roles,
        frontend.ready.get(deployment.model),
        frontend.health,
    )
    return found


def _by_model(workers: list[FoundWorker]) -> dict[str, list[FoundWorker]]:
    """Workers grouped by their card's model; card-less ones join the namespace's first model
    (a namespace serves one model in every topology Dynamo ships)."""
    groups: dict[str, list[FoundWorker]] = {}
    for worker in workers:
        if worker.card is not None:
            groups.setdefault(worker.card.model_name, []).append(worker)
    first = next(iter(groups), "")
    for worker in workers:
        if worker.card is None:
            groups.setdefault(first, []).append(worker)
    return groups


def _deployment_violations(
    deployment: AuditedDeployment, grace: float, now: float, frontend: FrontendView
) -> list[Violation]:
    roles = deployment.recognition.roles
    for worker in deployment.workers:
        spec = roles.get(worker.instance.key)
        worker.role = spec.role if spec else f"{worker.component} worker"
        worker.expected = spec.card if spec else None
    found: list[Violation] = []
    for worker in deployment.workers:
        if worker.card is None:
            if now - worker.first_seen >= grace:
                found.append(_never_registered(worker, deployment.namespace, grace))
        elif worker.expected is not None:
            found += checks.compare_card(worker, worker.card, deployment.model)
    found += _unmet_needs(deployment)
    if frontend.listed is not None and deployment.model:
        found += _frontend_violations(deployment, frontend)
    return found


def _never_registered(worker: FoundWorker, namespace: str, grace: float) -> Violation:
    instance = worker.instance
    return Violation(
        NEVER_REGISTERED,
        worker.role,
        f"worker '{worker.role}' ({worker.identity}) never registered (serving but without a "
        f"model card): component '{instance.component}', endpoint '{instance.endpoint}', "
        f"instance {instance.instance_id:x}; no card at v1/mdc/{namespace}/{instance.component}/"
        f"{instance.endpoint}/{instance.instance_id:x} within {grace:.0f} s; instance key "
        f"{instance.key}",
    )


def _present_types(deployment: AuditedDeployment) -> set[str]:
    """The worker types of the peers with a card, and of those without one by the role they
    were recognised as: a need that only a card-less peer would meet is that peer's
    never-registered, not a second finding."""
    present = {w.card.worker_type for w in deployment.workers if w.card is not None}
    return present | {
        w.expected.worker_type for w in deployment.workers if w.card is None and w.expected
    }


def _unmet_needs(deployment: AuditedDeployment) -> list[Violation]:
    """Every card's needs (an OR of ANDs of worker types) met by a present peer."""
    present = _present_types(deployment)
    found = []
    for worker in deployment.workers:
        card = worker.card
        if card is None or not card.needs:
            continue
        if any(set(group) <= present for group in card.needs):
            continue
        wanted = " or ".join("+".join(group) for group in card.needs)
        found.append(
            Violation(
                NEEDS_UNMET,
                worker.role,
                f"worker '{worker.role}' ({worker.identity}) needs {wanted}, but the "
                f"peers of '{deployment.model}' in {deployment.namespace} are "
                f"{sorted(present)}; card {card.key}",
            )
        )
    return found


def _as_contract(worker: FoundWorker) -> ExpectedCard:
    card = worker.card
    assert card is not None
    return ExpectedCard(
        model_type=card.model_type,
        model_input=card.model_input,
        worker_type=card.worker_type,
        needs=card.needs,
        public=card.model_type not in INTERNAL_TYPES,
    )


def _frontend_violations(deployment: AuditedDeployment, frontend: FrontendView) -> list[Violation]:
    model = deployment.model
    assert frontend.listed is not None
    with_cards = [w for w in deployment.workers if w.card is not None]
    servable = checks.servable([_as_contract(w) for w in with_cards]) and all(
        w.card is not None for w in deployment.workers
    )
    public = any(_as_contract(w).public for w in with_cards)
    found: list[Violation] = []
    if model not in frontend.listed:
        if servable and public:
            found.append(
                Violation(
                    NEVER_LISTED,
                    None,
                    f"model '{model}' is not in GET /v1/models although its workers in "
                    f"{deployment.namespace} have every card it needs",
                )
            )
        return found
    status, body = frontend.ready.get(model, (0, "not asked"))
    if not servable or status != 200:
        missing = [w.role for w in deployment.workers if w.card is None]
        found.append(
            Violation(
                LISTED_EARLY,
                None,
                f"model '{model}' is listed but its topology cannot serve it"
                + (f": no card for {', '.join(repr(r) for r in missing)}" if missing else "")
                + f"; GET /v1/models/{model}/ready -> {status} {body[:400]}",
            )
        )
    for reply in frontend.answers.get(model, ()):
        if reply.status == 503 or reply.status == 404:
            found.append(
                Violation(
                    STATUS_503 if reply.status == 503 else LISTED_EARLY,
                    None,
                    f"probe of the listed model: {reply.describe()}",
                )
            )
        elif not reply.ok:
            found.append(Violation(BAD_RESPONSE, None, f"probe: {reply.describe()}"))
    return found


def _orphans(
    state: DiscoveryState, namespace: str, first_seen: Mapping[str, float], now: float, grace: float
) -> list[Violation]:
    """Cards with no live instance, once the grace since they appeared has passed."""
    settled = DiscoveryState(
        {
            key: value
            for key, value in state.raw.items()
            if not key.startswith(CARDS_PREFIX) or now - first_seen.get(key, 0.0) >= grace
        }
    )
    return checks.cards_without_instances(settled, namespace)
