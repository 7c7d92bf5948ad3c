"""Does the frontend's own readiness agree with discovery? A pure judge.

The frontend says whether a model can be served (`GET /v1/models/{model}/ready`, per namespace
and worker type) and which instances it sees (`GET /health`). Load balancers and people act on
those answers, so they must say what etcd says. From etcd alone (the cards and instances of a
namespace) this module derives what the frontend's rule must conclude, measured on 1.6.1:
every worker type some card registers needs a live worker (a card whose generate instance is
in etcd), and every card's `needs` (an OR of ANDs of worker types) must be met by live types.
Then it compares: ready while a type is missing, not ready while all is met, or a missing type
the frontend does not name, is a violation showing both sides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.model.records import ModelCard
from discovery_harness.model.violations import (
    FRONTEND_HEALTH_STALE,
    FRONTEND_READINESS_DISAGREES,
    Violation,
)

GENERATE = "generate"
# How long the frontend may take to follow etcd before a difference counts (it follows in
# ~0.1 s on the CPU tier; only a disagreement waits this out).
AGREEMENT_DEADLINE_S = 3.0
InstanceId = tuple[str, str, int]  # component, endpoint, instance id


@dataclass(frozen=True)
class EtcdReadiness:
    """What the frontend must conclude about one model in one namespace, from etcd."""

    namespace: str
    model: str
    live: Mapping[str, int]  # worker type -> live workers (cards with a generate instance)
    needs: Mapping[str, tuple[tuple[str, ...], ...]]  # worker type -> its cards' needs
    missing: frozenset[str]  # types that must be named: registered but dead, or a sole need
    unmet: tuple[str, ...]  # needs with alternatives none of which is met ("a+b or c")
    keys: tuple[str, ...]  # the cards and generate instances read
    wanted_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # type -> types

    @property
    def registered(self) -> bool:
        return bool(self.live)

    @property
    def ready(self) -> bool:
        return self.registered and not self.missing and not self.unmet

    def describe(self) -> str:
        if not self.registered:
            return f"no card of '{self.model}' in {self.namespace}"
        types = ", ".join(
            f"{kind} {count} live (needs {_needs(self.needs.get(kind, ()))})"
            for kind, count in sorted(self.live.items())
        )
        verdict = "ready" if self.ready else "not ready"
        lacking = sorted(self.missing) + list(self.unmet)
        return f"{verdict}: {types}" + (f"; missing {', '.join(lacking)}" if lacking else "")


def readiness_from_etcd(state: DiscoveryState, namespace: str, model: str) -> EtcdReadiness:
    """The frontend's readiness rule applied to etcd's cards and instances of `model`."""
    cards = [
        c
        for c in state.cards(namespace)
        if c.lora_name is None and c.model_name == model and c.endpoint == GENERATE
    ]
    instances = {
        (i.component, i.endpoint, i.instance_id): i.key
        for i in state.instances(namespace)
        if i.endpoint == GENERATE
    }
    live: dict[str, int] = {}
    needs: dict[str, tuple[tuple[str, ...], ...]] = {}
    keys: list[str] = []
    for card in cards:
        instance = instances.get((card.component, card.endpoint, card.instance_id))
        live[card.worker_type] = live.get(card.worker_type, 0) + (instance is not None)
        needs[card.worker_type] = _merged(needs.get(card.worker_type, ()), card.needs)
        keys += [card.key] + ([instance] if instance else [])
    alive = {kind for kind, count in live.items() if count}
    missing = {kind for kind, count in live.items() if not count}
    unmet: list[str] = []
    wanted_by: dict[str, tuple[str, ...]] = {}
    for card in cards:
        if not card.needs or any(set(group) <= alive for group in card.needs):
            continue
        for kind in {k for group in card.needs for k in group} - alive:
            wanted_by[kind] = tuple(sorted({*wanted_by.get(kind, ()), card.worker_type}))
        if len(card.needs) == 1:
            missing |= set(card.needs[0]) - alive
        elif _needs(card.needs) not in unmet:
            unmet.append(_needs(card.needs))
    return EtcdReadiness(
        namespace,
        model,
        live,
        needs,
        frozenset(missing),
        tuple(unmet),
        tuple(sorted(keys)),
        wanted_by,
    )


@dataclass(frozen=True)
class ReadyAnswer:
    """GET /v1/models/{model}/ready, the namespace's part of it read."""

    status: int
    body: str
    known: bool  # the frontend names the namespace for this model
    ready: bool = False
    workers: Mapping[str, int] = field(default_factory=dict)  # worker type -> its count
    missing: tuple[str, ...] = ()

    def describe(self, model: str) -> str:
        return f"GET /v1/models/{model}/ready -> {self.status} {self.body[:600]}"


def parse_ready(status: int, body: str, namespace: str) -> ReadyAnswer:
    """The answer as the frontend gave it; a 404 or a body without the namespace: unknown."""
    try:
        data = json.loads(body)
    except ValueError:
        return ReadyAnswer(status, body, known=False)
    part = (data.get("namespaces") or {}).get(namespace) if isinstance(data, dict) else None
    if not isinstance(part, dict):
        return ReadyAnswer(status, body, known=False)
    types = part.get("worker_types") or {}
    return ReadyAnswer(
        status,
        body,
        known=True,
        ready=bool(part.get("ready")),
        workers={str(k): int((v or {}).get("workers", 0)) for k, v in types.items()},
        missing=tuple(str(t) for t in part.get("missing_worker_types") or ()),
    )


def readiness_disagreements(
    etcd: EtcdReadiness,
    answer: ReadyAnswer,
    roles: Mapping[str, Sequence[str]],
    moment: str,
) -> list[Violation]:
    """Where the frontend's /ready and etcd disagree (empty: they agree). `roles` names the
    workers of each worker type, for the message; `moment` says when it was read."""
    said = answer.known and answer.ready
    problem = ""
    if said and not etcd.ready:
        lacking = sorted(etcd.missing) + list(etcd.unmet)
        problem = f"says ready while etcd lacks {', '.join(lacking) or 'every card'}"
    elif etcd.ready and not said:
        problem = "says not ready (or does not know the namespace) while etcd meets every need"
    elif answer.known and not said:
        unnamed = sorted(etcd.missing - set(answer.missing))
        if unnamed:
            problem = f"does not name {', '.join(unnamed)} in missing_worker_types"
    if not problem:
        return []
    return [
        Violation(
            FRONTEND_READINESS_DISAGREES,
            _role_of(etcd, roles),
            f"{moment}: the frontend's readiness of '{etcd.model}' in {etcd.namespace} "
            f"{problem}{_roles_text(etcd, roles)}. etcd: {etcd.describe()}; keys "
            f"{', '.join(etcd.keys) or '(none)'}. Frontend: {answer.describe(etcd.model)}",
        )
    ]


def health_instances(body: Any, namespace: str) -> set[InstanceId]:
    """The namespace's instances in the frontend's GET /health answer."""
    found = set()
    for item in (body or {}).get("instances") or () if isinstance(body, dict) else ():
        if isinstance(item, dict) and item.get("namespace") == namespace:
            found.add(
                (str(item.get("component")), str(item.get("endpoint")), int(item["instance_id"]))
            )
    return found


def etcd_instances(state: DiscoveryState, namespace: str) -> dict[InstanceId, str]:
    """The namespace's live instances in etcd, each with its key."""
    return {(i.component, i.endpoint, i.instance_id): i.key for i in state.instances(namespace)}


def health_disagreements(
    etcd: Mapping[InstanceId, str], frontend: set[InstanceId], namespace: str, moment: str
) -> list[Violation]:
    """The frontend's /health instances against etcd's (empty: the same set)."""
    extra = sorted(frontend - set(etcd))
    lacking = sorted(set(etcd) - frontend)
    if not extra and not lacking:
        return []
    parts = []
    if lacking:
        parts.append("lacks " + ", ".join(etcd[i] for i in lacking) + " that etcd holds")
    if extra:
        parts.append(
            "lists " + ", ".join(f"{c}/{e}/{n:x}" for c, e, n in extra) + " that etcd does not hold"
        )
    return [
        Violation(
            FRONTEND_HEALTH_STALE,
            None,
            f"{moment}: the frontend's GET /health {'; '.join(parts)} in {namespace} "
            f"(etcd {len(etcd)} instance(s), frontend {len(frontend)})",
        )
    ]


def roles_by_type(
    cards: Sequence[ModelCard], role_of_card: Mapping[str, str]
) -> dict[str, list[str]]:
    """Worker type -> the roles whose cards carry it (`role_of_card`: card key -> role)."""
    found: dict[str, list[str]] = {}
    for card in cards:
        role = role_of_card.get(card.key)
        if role and role not in found.setdefault(card.worker_type, []):
            found[card.worker_type].append(role)
    return found


def _concerned(etcd: EtcdReadiness, roles: Mapping[str, Sequence[str]]) -> list[str]:
    """The roles a disagreement is about: those of a missing type, else those whose needs
    want it, else every live one."""
    lacking = sorted(etcd.missing | set(etcd.wanted_by))
    named = [r for kind in lacking for r in roles.get(kind, ())]
    wanting = sorted({w for kind in lacking for w in etcd.wanted_by.get(kind, ())})
    return named or [r for kind in wanting or sorted(etcd.live) for r in roles.get(kind, ())]


def _role_of(etcd: EtcdReadiness, roles: Mapping[str, Sequence[str]]) -> str | None:
    named = _concerned(etcd, roles)
    return named[0] if len(set(named)) == 1 else None


def _roles_text(etcd: EtcdReadiness, roles: Mapping[str, Sequence[str]]) -> str:
    parts = []
    for kind in sorted(etcd.missing | set(etcd.wanted_by)):
        who = [f"'{r}'" for r in roles.get(kind, ())]
        wanting = [f"'{r}'" for w in etcd.wanted_by.get(kind, ()) for r in roles.get(w, ())]
        text = f"{kind} ({', '.join(who)})" if who else kind
        parts.append(text + (f" needed by {', '.join(wanting)}" if wanting else ""))
    return f" [missing in etcd: {'; '.join(parts)}]" if parts else ""


def _merged(
    known: tuple[tuple[str, ...], ...], more: tuple[tuple[str, ...], ...]
) -> tuple[tuple[str, ...], ...]:
    return known + tuple(group for group in more if group not in known)


def _needs(needs: tuple[tuple[str, ...], ...]) -> str:
    return " or ".join("+".join(group) for group in needs) or "nothing"


def audit_agreement(
    state: DiscoveryState,
    namespace: str,
    model: str,
    roles: Mapping[str, Sequence[str]],
    ready: tuple[int, str] | None,
    health: Any,
) -> tuple[list[Violation], list[str]]:
    """The audit's checks of one deployment: its /ready answer (None: not asked) and the
    frontend's /health body (None: not asked) against etcd; the violations, and one line per
    check for the audit's output (what both sides said)."""
    found: list[Violation] = []
    lines: list[str] = []
    moment = "at the audit"
    if ready is not None and model:
        etcd = readiness_from_etcd(state, namespace, model)
        answer = parse_ready(*ready, namespace)
        disagree = readiness_disagreements(etcd, answer, roles, moment)
        said = "ready" if answer.ready else "not ready"
        if answer.missing:
            said += f", missing {', '.join(answer.missing)}"
        lines.append(
            f"frontend /ready: {answer.status} {said}; etcd: {etcd.describe()}: "
            + ("DISAGREE" if disagree else "agree")
        )
        found += disagree
    if health is not None:
        held = etcd_instances(state, namespace)
        listed = health_instances(health, namespace)
        stale = health_disagreements(held, listed, namespace, moment)
        lines.append(
            f"frontend /health: {len(listed)} instance(s) of {namespace}; etcd {len(held)}: "
            + ("DISAGREE" if stale else "agree")
        )
        found += stale
    return found, lines
