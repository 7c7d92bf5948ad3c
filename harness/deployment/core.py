"""Deploy one topology against the session's etcd, NATS and frontend, and judge it.

A Deployment starts every worker at once (some wait for their peers before registering),
waits on etcd watch events until each has its instance and model card, waits until the
frontend lists each public model, then lets the test send requests. Every finding is a
`Violation`; `ContractFailure` carries all of them at once.
"""

from __future__ import annotations

import dataclasses
import time
import uuid

from harness.common.deadline import Deadline
from harness.deployment import diagnosis, readiness
from harness.deployment.launching import Launching
from harness.deployment.listing import ListingWatch
from harness.deployment.observing import Observing
from harness.deployment.options import (
    FILE,
    FRONTEND_MODES,
    OWN,
    SHARED,
    Planes,
)
from harness.deployment.progress import (
    LogMilestones,
    ProgressTicker,
)
from harness.deployment.session import Session
from harness.deployment.worker import Worker
from harness.discovery.observer import DiscoveryObserver
from harness.discovery.sources import FileSource
from harness.judge import deployment as judged
from harness.judge.verdict import set_aside_known
from harness.model.topology import Scenario, Topology
from harness.model.violations import (
    ContractFailure,
    Violation,
)
from harness.processes import ports
from harness.runtime import dynamo_env, gpus
from harness.runtime.frontend import Frontend
from harness.runtime.launch import placeholders
from harness.runtime.spawn import FRESH
from harness.serving import shapes
from harness.serving.http_client import RecordingClient
from harness.serving.model_facts import NO_FACTS, ModelFacts
from harness.serving.requests import Reply, send
from harness.serving.shapes import DEFAULT


class Deployment(Launching, Observing):
    """One topology deployed: launched by `Launching`, watched by `Observing`, judged by
    harness.judge; this class holds its state, readiness and verdict."""

    def __init__(
        self,
        what: Topology | Scenario,
        session: Session,
        *,
        faults: dict[str, str] | None = None,
        fault_delay_s: float = 0.0,
        strict: bool = False,
        sequential: bool | None = None,
        spawn: str | None = None,
        order: tuple[str, ...] | None = None,
        frontend: str = SHARED,
        env: dict[str, str] | None = None,
        planes: Planes | None = None,
    ) -> None:
        self.scenario = what if isinstance(what, Scenario) else Scenario.packed(what)
        # Fresh processes when asked for (or no template exists), else the session's template.
        self._spawner = None if spawn == FRESH else session.spawner
        # The layout's start order: the GPU tier's default; a CPU-tier test can ask for it.
        self.sequential = session.settings.tier.start_order if sequential is None else sequential
        # An explicit start order: every worker, one at a time, each registered (or left
        # waiting for its peers) before the next starts.
        self.order = tuple(order) if order is not None else None
        topology = self.topology = self.scenario.topology
        if self.order is not None and sorted(self.order) != sorted(
            w.role for w in topology.workers
        ):
            raise ValueError(f"order {self.order} must name every role of {topology.name} once")
        self.session = session
        self.faults = dict(faults or {})
        unknown = set(self.faults) - {w.role for w in topology.workers}
        if unknown:
            raise ValueError(f"faults for roles not in {topology.name}: {sorted(unknown)}")
        self.fault_delay_s = fault_delay_s
        self.strict = strict  # self-tests see known violations too
        self.known_seen: list[tuple[Violation, str]] = []
        self.found: list[Violation] = []  # every violation a verdict raised (for the history)
        suffix = uuid.uuid4().hex[:6]
        self.namespace = f"h-{topology.name}-{suffix}"
        era_name = topology.era.served_model_name if topology.era else None
        self.model_name = era_name or f"{topology.name}-{suffix}"
        self.workers: list[Worker] = []
        # Discovery backend and request / event planes: the session's (etcd, TCP, NATS), or
        # others for this deployment alone, with a frontend and an observer of its own.
        self.planes = planes or Planes()
        self.workdir = session.workdir / "deployments" / self.namespace
        plane_env = self.planes.env(self.workdir / "discovery")
        if plane_env and frontend == SHARED:
            frontend = OWN
        self.observer = (
            DiscoveryObserver(FileSource(self.workdir / "discovery"))
            if self.planes.discovery == FILE
            else session.observer
        )
        # The session's frontend, or one of its own: started with the deployment ("own") or
        # once every worker has registered ("late"), on a port fixed now so a restart keeps it.
        if frontend not in FRONTEND_MODES:
            raise ValueError(f"frontend must be one of {FRONTEND_MODES}, not {frontend!r}")
        self.frontend_mode = frontend
        self.frontend: Frontend | None = session.frontend if frontend == SHARED else None
        self._frontend_port = session.frontend.port if frontend == SHARED else ports.allocate_one()
        base_url = f"http://127.0.0.1:{self._frontend_port}"
        self._env = {**plane_env, **(env or {})}  # on top of every worker's own (and frontend's)
        self.client = RecordingClient(base_url)
        self.replies: list[Reply] = []
        self.frontend_log_offset = session.frontend.log_offset() if frontend == SHARED else 0
        self.listing = ListingWatch(base_url, self.model_name, self._roles_without_card_in_etcd)
        self._killed: set[str] = set()
        # Roles still alive a stop grace after kill(): SIGKILLed then (reported by the edges).
        self.escalated: list[str] = []
        self._retired: list[Worker] = []  # workers replaced by a restart
        self.strays: list[Worker] = []  # started into the namespace, not of the topology
        # Fresh processes here (spawn="fresh") get the fresh deadline, whatever the session's.
        self.deadline = Deadline(
            session.settings.register_deadline(self.scenario, forked=self._spawner is not None)
        )
        self.not_started: list[Violation] = []
        self._gpus = (
            gpus.assign(self.scenario.placement, session.gpu_share)
            if session.settings.tier.gpus
            else {}
        )
        # Ports the workers share ({port:NAME} in their flags), one set per deployment.
        names = sorted({n for w in topology.workers for n in placeholders(w.flags)})
        self._shared_ports = dict(zip(names, ports.allocate(len(names)), strict=True))
        self._milestones: dict[str, LogMilestones] = {}
        # Set once a verdict was reached (readiness failed, or verify() ran): the deploy
        # fixture verifies every deployment that has none, whatever the test body did.
        self.verdict_given = False
        self.verdict_at: float | None = None  # wall time of the verdict (the report's mark)
        self._ticker: ProgressTicker | None = None

    def await_ready(self) -> Deployment:
        """Every worker registered as declared and every public model listed, or fail."""
        __tracebackhide__ = True  # a failure shows the test's line and the violations
        try:
            violations = self._without_known(readiness.ready_violations(self))
        except BaseException as error:
            self._stop_progress(f"start interrupted: {type(error).__name__}")
            self.verdict_given = True
            raise
        if violations:
            kinds = ", ".join(sorted({v.kind for v in violations}))
            self._stop_progress(f"not ready: {len(violations)} violation(s) ({kinds})")
            self.verdict_given = True
            self.verdict_at = time.time()
            self.found += violations
            raise ContractFailure(self.topology.name, violations)
        self._stop_progress("ready")
        self.model_facts().warm()  # before the test's requests, not in their midst
        self.client.mark_ready()
        return self

    def send(self, kind: str, model: str | None = None, shape: str = DEFAULT) -> Reply:
        """A request of `kind` in `shape` for the topology's model (or another name it serves,
        a LoRA), judged against the model its public worker serves."""
        reply = send(kind, self.client, model or self.model_name, shape, self.model_facts())
        self.replies.append(reply)
        return reply

    def send_shapes(self) -> list[Reply]:
        """Every request shape the topology declares (its `shapes`), each once."""
        chosen = shapes.selected(self.topology.requests, self.topology.shapes)
        return [self.send(s.kind, shape=s.name) for s in chosen]

    def model_facts(self) -> ModelFacts:
        """The model as the topology serves it: the public worker's (they serve one model),
        whose context length is the smallest any registering worker serves (a request passes
        through each of them); none known before they started."""
        public = [w for w in self.workers if w.expected is not None and w.expected.public]
        if not public:
            return NO_FACTS
        serving = [w for w in self.workers if w.registers and w.context_length is not None]
        if len({w.context_length for w in serving}) < 2:
            return public[0].model
        least = min(serving, key=lambda w: w.context_length or 0)
        sources = ", ".join(f"{w.role} {w.context_source}" for w in serving)
        return dataclasses.replace(
            public[0].model,
            context_length=least.context_length,
            context_source=f"the smallest of its workers': {sources}",
        )

    def send_unrecorded(self, kind: str) -> Reply:
        """A readiness probe: its exchange is recorded but it is not one of the test's replies."""
        return send(kind, self.client, self.model_name)

    def verify(self) -> None:
        """Raise ContractFailure for anything wrong since readiness."""
        __tracebackhide__ = True
        self.verdict_given = True
        violations: list[Violation] = []
        for worker in self.workers:
            if not worker.proc.alive() and worker.role not in self._killed:
                violations.append(
                    diagnosis.exited(
                        worker, self.observer.state(), self.namespace, "nothing (it had registered)"
                    )
                )
        frontend_log = self.frontend.log_since(self.frontend_log_offset) if self.frontend else ""
        violations += judged.after_ready(
            self.discovery_now(),
            self.namespace,
            self.model_name,
            self.workers,
            self.strays,
            self.client.exchanges,
            self.replies,
            frontend_log,
        )
        violations = self._without_known(violations)
        self.verdict_at = time.time()
        if violations:
            self.found += violations
            raise ContractFailure(self.topology.name, violations)

    def _without_known(self, violations: list[Violation]) -> list[Violation]:
        """Set aside the violations this Dynamo release is declared to show (unless strict)."""
        verdict = set_aside_known(
            violations, self.topology.known_violations, dynamo_version(), self.strict
        )
        self.known_seen += verdict.known
        return list(verdict.violations)


def dynamo_version() -> str:
    """The release the run drives (see harness.runtime.dynamo_env)."""
    return dynamo_env.active().version
