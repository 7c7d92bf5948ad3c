"""The readiness contract: what each worker's `/health` (Kubernetes' readiness probe) must say
over its life, judged against its card. Pure: the health watch and the etcd watch observed;
this judges.

A worker that registers must say ready within the card grace once it registered and the
model was served, never before its
card is in etcd (traffic it cannot serve), and, once ready, must not fall back to not ready
while nothing was done to it. A worker that must not register (a multi-node follower) keeps
the contract measured on 1.6.1: its `/health` answers 503 notready for as long as it lives.
"""

from __future__ import annotations

from dataclasses import dataclass

from discovery_harness.judge.checks import WorkerView, named
from discovery_harness.model.topology import READY_AFTER_CARD, STAYS_NOT_READY
from discovery_harness.model.violations import (
    NEVER_READY,
    READY_BEFORE_CARD,
    READY_BUT_MUST_NOT,
    UNREADY_AFTER_READY,
    Violation,
)
from discovery_harness.serving.worker_health import READY, WorkerHealth


@dataclass(frozen=True)
class HealthFacts:
    """One worker as the readiness contract sees it."""

    worker: WorkerView
    contract: str | None  # READY_AFTER_CARD, STAYS_NOT_READY, or None (not judged)
    health: WorkerHealth | None  # what its /health said (None: never watched)
    card_keys: tuple[str, ...] = ()  # its own model cards' keys, as etcd holds them
    card_at: float | None = None  # its first card's first put (wall time)
    evidence: str = ""  # its log lines that matter


def judge(facts: HealthFacts, waited: str) -> list[Violation]:
    """Every way one worker's /health broke its contract. `waited`: how long readiness waited
    for it to say ready (for the message)."""
    if facts.contract is None or facts.health is None:
        return []
    if facts.contract == STAYS_NOT_READY:
        return _stays_not_ready(facts)
    if facts.contract != READY_AFTER_CARD:
        raise ValueError(f"unknown readiness contract {facts.contract!r}")
    health = facts.health
    if health.ready_at is None:
        return [_never_ready(facts, waited)]
    return [*_ready_before_card(facts), *_fell_back(facts)]


def _said(health: WorkerHealth) -> str:
    return f"its /health ({health.url}) said: {health.history()}"


def _never_ready(facts: HealthFacts, waited: str) -> Violation:
    health = facts.health
    assert health is not None
    card = (
        f"its card {facts.card_keys[0]} was written +{facts.card_at - health.started:.2f} s "
        "after spawn"
        if facts.card_keys and facts.card_at is not None
        else "it has no card"
    )
    return Violation(
        NEVER_READY,
        facts.worker.role,
        f"{named(facts.worker)} never said ready on /health within {waited}: Kubernetes' "
        f"readiness probe keeps it out of service (with Kubernetes discovery it is never "
        f"found, as if it never registered)\n"
        f"  expected: /health 200 ready once its card is in etcd\n"
        f"  seen:     {_said(health)}; {card}",
        evidence=facts.evidence,
    )


def _ready_before_card(facts: HealthFacts) -> list[Violation]:
    health = facts.health
    assert health is not None and health.ready_at is not None
    held = health.cards_when_ready
    if held is None or not facts.card_keys or any(k in held for k in facts.card_keys):
        return []  # etcd not read at that moment, no card to judge by, or it was there
    window = (
        f"{facts.card_at - health.ready_at:.2f} s"
        if facts.card_at is not None
        else "until the end (its card never came)"
    )
    return [
        Violation(
            READY_BEFORE_CARD,
            facts.worker.role,
            f"{named(facts.worker)} said ready on /health {window} before its card was in "
            f"etcd: a readiness probe sends it traffic it cannot serve yet\n"
            f"  expected: /health ready only once {facts.card_keys[0]} exists\n"
            f"  seen:     ready at +{health.ready_at - health.started:.2f} s after spawn, when "
            f"etcd held {len(held)} card(s) in total, none of them its own; {_said(health)}",
            evidence=facts.evidence,
            at=(health.ready_at,),
        )
    ]


def _fell_back(facts: HealthFacts) -> list[Violation]:
    health = facts.health
    assert health is not None and health.ready_at is not None
    after = [c for c in health.before_stop() if c.at > health.ready_at and c.status != READY]
    if not after:
        return []
    first = after[0]
    return [
        Violation(
            UNREADY_AFTER_READY,
            facts.worker.role,
            f"{named(facts.worker)} fell back to not ready on /health "
            f"{first.at - health.ready_at:.2f} s after it first said ready, while the harness "
            f"did nothing to it: {first.describe()}\n"
            f"  expected: ready from its first ready answer until it is stopped\n"
            f"  seen:     {_said(health)}",
            evidence=facts.evidence,
            at=tuple(c.at for c in after),
        )
    ]


def _stays_not_ready(facts: HealthFacts) -> list[Violation]:
    health = facts.health
    assert health is not None
    ready = [c for c in health.before_stop() if c.status == READY]
    if not ready:
        return []
    return [
        Violation(
            READY_BUT_MUST_NOT,
            facts.worker.role,
            f"{named(facts.worker)} must never be ready (it serves nothing routable; "
            f"measured on 1.6.1: its /health answers 503 notready for its whole life), but "
            f"it said ready at +{ready[0].at - health.started:.2f} s\n"
            f"  seen:     {_said(health)}",
            evidence=facts.evidence,
            at=(ready[0].at,),
        )
    ]
