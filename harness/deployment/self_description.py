"""A worker's self-description gathered for the verdict: each registering worker's `/metrics`
(read once, all workers in parallel), its cards in etcd, and the LoRA cards seen while
adapters were loaded; judged by discovery_harness.judge.self_description, with each failing
worker's log lines as evidence. Takes values (workers, the roster, etcd's state), never the
deployment."""

from __future__ import annotations

import dataclasses

from discovery_harness.deployment import diagnosis
from discovery_harness.deployment.roster import Roster
from discovery_harness.deployment.worker import Worker
from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge import self_description as judged
from discovery_harness.model.violations import Violation
from discovery_harness.serving import metrics


def lora_violations(roster: Roster, state: DiscoveryState) -> list[Violation]:
    """Every LoRA card in etcd now, against its worker's base card (same instance)."""
    found: list[Violation] = []
    for worker in roster.registering:
        records = roster.records(state, worker)
        for base in records.cards:
            loras = [
                c
                for c in state.cards(roster.namespace)
                if c.lora_name is not None
                and (c.component, c.endpoint, c.instance_id)
                == (base.component, base.endpoint, base.instance_id)
            ]
            found += [v for lora in loras for v in judged.lora_violations(worker, base, lora)]
    return found


class SelfDescription:
    """The deployment's self-description check: LoRA cards noted while loaded (they are gone
    by the verdict), then every worker's metrics and runtime config at the verdict."""

    def __init__(self, judged_here: bool) -> None:
        self.judged_here = judged_here  # False: an older release, not held to it
        self._noted: dict[tuple[str | None, str], Violation] = {}

    def note_loras(self, roster: Roster, state: DiscoveryState) -> None:
        """Judge the LoRA cards etcd holds now; the verdict reports what is wrong."""
        if self.judged_here:
            for violation in lora_violations(roster, state):
                self._noted[(violation.role, violation.message)] = violation

    def verdict(self, roster: Roster, state: DiscoveryState) -> list[Violation]:
        """Every registering worker's self-description, judged now (its LoRA cards too)."""
        if not self.judged_here:
            return []
        live = [w for w in roster.registering if w.proc.alive()]
        reads = metrics.read_all([w.ports.system for w in live])
        found: list[Violation] = []
        for worker, read in zip(live, reads, strict=True):
            cards = roster.records(state, worker).cards
            mine = [
                v
                for card in cards
                for v in judged.runtime_config_violations(worker, card, worker.argv)
            ]
            if cards and read.read:  # no answer: the health watch reports a silent worker
                mine += judged.metrics_violations(worker, cards[0].model_name, read)
            found += _with_evidence(worker, mine)
        self.note_loras(roster, state)
        by_role = {w.role: w for w in roster.workers}
        noted = list(self._noted.values())
        return found + [
            v
            for role in dict.fromkeys(v.role for v in noted)
            for v in _with_evidence(by_role.get(role or ""), [n for n in noted if n.role == role])
        ]


def _with_evidence(worker: Worker | None, found: list[Violation]) -> list[Violation]:
    if not found or worker is None:
        return found
    evidence = diagnosis.log_evidence(worker)
    return [dataclasses.replace(v, evidence=evidence) for v in found]
