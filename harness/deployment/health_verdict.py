"""The readiness contract applied to a deployment's workers: the facts gathered from the
health watch and etcd, judged by discovery_harness.judge.health, with each failing worker's
log lines as evidence. Takes values (the watch, the observer, the roster), never the
deployment."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment import diagnosis
from discovery_harness.deployment.roster import Roster
from discovery_harness.deployment.worker import Worker
from discovery_harness.discovery.observer import DiscoveryObserver
from discovery_harness.judge import health as judged
from discovery_harness.model.topology import READY_AFTER_CARD
from discovery_harness.model.violations import (
    NEVER_READY,
    READY_BEFORE_CARD,
    READY_BUT_MUST_NOT,
    UNREADY_AFTER_READY,
    Violation,
)
from discovery_harness.serving.worker_health import HealthWatch

# Known once every worker said ready (a follower that registered is waited for too: a
# readiness that fails on its registration has no later verdict to find it in).
AT_READINESS = (NEVER_READY, READY_BEFORE_CARD, READY_BUT_MUST_NOT)
AT_VERDICT = (UNREADY_AFTER_READY, READY_BUT_MUST_NOT)  # need the whole life before the verdict


def card_keys_now(observer: DiscoveryObserver, namespace: str) -> list[str]:
    """The model-card keys of the namespace in etcd, read directly (the health watch reads
    them at each worker's first ready answer)."""
    return observer.read_now([f"v1/mdc/{namespace}/"]).keys()


def await_ready(
    watch: HealthWatch,
    workers: Sequence[Worker],
    deadline: Deadline,
    registered_anyway: Collection[str] = (),
) -> None:
    """Until every worker held to READY_AFTER_CARD said ready, or the deadline. A worker that
    registered although it must not (its roles in `registered_anyway`) is waited for too: it
    serves, so whether it also says ready is decided by its /health, not by how soon the
    others were ready."""
    pids = [
        w.pid
        for w in workers
        if w.spec.readiness == READY_AFTER_CARD or w.role in registered_anyway
    ]
    if pids:
        watch.wait_ready(pids, deadline)


def violations(
    watch: HealthWatch,
    observer: DiscoveryObserver,
    roster: Roster,
    kinds: tuple[str, ...],
    waited: str,
) -> list[Violation]:
    """The readiness contract's violations of `kinds` for every worker of the roster."""
    state = observer.state()
    found: list[Violation] = []
    for worker in roster.workers:
        records = roster.records(state, worker)
        keys = tuple(card.key for card in records.cards)
        first = observer.first_put(keys[0]) if keys else None
        facts = judged.HealthFacts(
            worker=worker,
            contract=worker.spec.readiness,
            health=watch.of(worker.pid),
            card_keys=keys,
            card_at=first.wall_time if first is not None else None,
        )
        mine = [v for v in judged.judge(facts, waited) if v.kind in kinds]
        if mine:
            evidence = diagnosis.log_evidence(worker)
            found += [dataclasses.replace(v, evidence=evidence) for v in mine]
    return found
