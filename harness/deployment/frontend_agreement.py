"""The frontend's own readiness read at the moments that matter, judged against etcd read
directly at the same moment.

etcd and the frontend see a change at slightly different moments (the frontend follows its
own watch), so one read of each can disagree for a few milliseconds without anything being
wrong. A check therefore reads both until they agree, up to AGREEMENT_DEADLINE_S: a
disagreement is reported only if it outlives the deadline, with both sides as last read.
Agreement at the first read costs one etcd read and two GETs (a few milliseconds).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment.options import LATE
from discovery_harness.deployment.plan import DeploymentPlan
from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge.frontend_readiness import (
    AGREEMENT_DEADLINE_S,
    EtcdReadiness,
    etcd_instances,
    health_disagreements,
    health_instances,
    parse_ready,
    readiness_disagreements,
    readiness_from_etcd,
)
from discovery_harness.model.violations import Violation

POLL_S = 0.05


class EtcdNow(Protocol):
    """What reads the namespace from etcd directly, not the watch's view (its DeploymentView)."""

    def discovery_now(self) -> DiscoveryState: ...


@dataclass(frozen=True)
class Reading:
    """One check's outcome, for the report: when, what etcd implied, what the frontend said."""

    moment: str
    etcd: str
    frontend: str
    reads: int  # rounds of (etcd, /ready, /health) until agreement or the deadline
    agreed: bool


@dataclass
class FrontendAgreement:
    """Checks the frontend's /ready and /health against etcd; keeps what it found until the
    deployment's verdict takes it."""

    base_url: str
    namespace: str
    model: str
    etcd_now: EtcdNow
    roles: Mapping[str, Sequence[str]]  # worker type -> the roles of that type
    asked_during_start: bool = True
    # Else /ready is not judged: the topology serves no public model, or its release predates
    # the readiness contract (0.7.1's frontend has no /ready: 404).
    judged: bool = True
    deadline_s: float = AGREEMENT_DEADLINE_S
    readings: list[Reading] = field(default_factory=list)
    _found: list[Violation] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(
        self, moment: str, health: bool = True, within_s: float | None = None
    ) -> list[Violation]:
        """Read etcd and the frontend until they agree or the deadline (`within_s`, default
        AGREEMENT_DEADLINE_S) passes; return (and keep) the disagreements left. `moment` names
        when, for the messages."""
        if not self.judged:
            return []
        deadline = Deadline(self.deadline_s if within_s is None else within_s)
        reads = 0
        # Plain HTTP to 127.0.0.1: no TLS context to build (~25 ms a client), no proxy.
        with httpx.Client(
            base_url=self.base_url, timeout=2.0, verify=False, trust_env=False
        ) as client:
            while True:
                reads += 1
                state = self.etcd_now.discovery_now()
                etcd = readiness_from_etcd(state, self.namespace, self.model)
                found, said = self._judge(client, state, etcd, moment, health)
                if not found or deadline.expired:
                    break
                threading.Event().wait(deadline.slice(POLL_S))
        with self._lock:
            self.readings.append(Reading(moment, etcd.describe(), said, reads, not found))
            self._found += found
        return found

    def during_start(self, started: str, still_to_start: Sequence[str]) -> None:
        """A start order between two workers: the topology is incomplete, and /ready must say
        so, naming what etcd lacks."""
        if still_to_start and self.asked_during_start:
            waiting = ", ".join(f"'{r}'" for r in still_to_start)
            self.check(f"start order: '{started}' up, {waiting} not started yet")

    def after_ready(self, ready: bool) -> list[Violation]:
        """Readiness reached (`ready`): /ready must say ready and /health list etcd's
        instances. Returns every disagreement found since the start."""
        if ready:
            self.check("after readiness")
        return self.take()

    def take(self) -> list[Violation]:
        """The disagreements found since the last take (each reported once)."""
        with self._lock:
            found, self._found = self._found, []
        return found

    def _judge(
        self,
        client: httpx.Client,
        state: DiscoveryState,
        etcd: EtcdReadiness,
        moment: str,
        health: bool,
    ) -> tuple[list[Violation], str]:
        path = f"/v1/models/{self.model}/ready"
        try:
            reply = client.get(path)
            answer = parse_ready(reply.status_code, reply.text, self.namespace)
        except httpx.HTTPError as error:
            answer = parse_ready(0, f"GET {path} failed: {error}", self.namespace)
        found = readiness_disagreements(etcd, answer, self.roles, moment)
        said = f"/ready {answer.status} " + ("ready" if answer.ready else "not ready")
        if answer.missing:
            said += f", missing {', '.join(answer.missing)}"
        if health:
            try:
                listed = health_instances(client.get("/health").json(), self.namespace)
            except (httpx.HTTPError, ValueError):
                listed = set()
            held = etcd_instances(state, self.namespace)
            found += health_disagreements(held, listed, self.namespace, moment)
            said += f"; /health {len(listed)} instance(s)"
        return found, said


def roles_of_types(workers: Sequence[tuple[str, str | None]]) -> dict[str, list[str]]:
    """(role, the worker type its card declares or None) -> worker type -> roles."""
    found: dict[str, list[str]] = {}
    for role, worker_type in workers:
        if worker_type is not None:
            found.setdefault(worker_type, []).append(role)
    return found


def for_plan(plan: DeploymentPlan, etcd_now: EtcdNow) -> FrontendAgreement:
    """The checks of one deployment: its frontend, namespace, model and roles. With a frontend
    started only once the workers are up, there is none to ask during the start order."""
    workers = [(w.role, w.card.worker_type if w.card else None) for w in plan.topology.workers]
    return FrontendAgreement(
        plan.base_url,
        plan.namespace,
        plan.model_name,
        etcd_now,
        roles_of_types(workers),
        asked_during_start=plan.frontend_mode != LATE,
        judged=bool(plan.topology.public_workers) and plan.topology.frontend_readiness_judged,
    )
