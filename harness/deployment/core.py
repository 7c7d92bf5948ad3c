"""Deploy one topology against the session's etcd, NATS and frontend, and judge it.

A Deployment starts every worker at once (some wait for their peers before registering),
waits on etcd watch events until each has its instance and model card, waits until the
frontend lists each public model, then lets the test send requests. Every finding is a
`Violation`; `ContractFailure` carries all of them at once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import uuid
from pathlib import Path

from harness import checks, ports
from harness.deadline import Deadline
from harness.deployment import diagnosis, readiness
from harness.deployment.listing import ListingWatch, await_listing
from harness.deployment.options import (
    FILE,
    FRONTEND_MODES,
    OWN,
    SHARED,
    TCP,
    Planes,
)
from harness.deployment.progress import (
    LogMilestones,
    ProgressTicker,
    Sample,
    StartProgress,
    WorkerSample,
)
from harness.deployment.session import Session
from harness.deployment.timeline import WorkerTimeline, worker_timelines
from harness.deployment.worker import Worker
from harness.discovery_sources import FileSource
from harness.frontend import Frontend, start_frontend
from harness.http_client import RecordingClient
from harness.judge import deployment as judged
from harness.judge.verdict import set_aside_known
from harness.loopback import ProcessPorts
from harness.observer import DiscoveryObserver, DiscoveryState
from harness.processes import ManagedProcess, stop_all
from harness.records import ModelCard
from harness.requests import Reply, send
from harness.runtime import dynamo_env, gpus
from harness.runtime.launch import WorkerSite, placeholders, worker_command
from harness.runtime.spawn import FRESH, TEMPLATE_IMPORT_DEADLINE_S
from harness.topology import Scenario, Topology, WorkerSpec
from harness.violations import (
    ContractFailure,
    Violation,
)

ROOT = Path(__file__).resolve().parents[2]


class Deployment:
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

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> Deployment:
        """Launch every worker; with the layout's start order (GPU tier), co-located workers
        start one at a time, each serving (instance in etcd) before the next starts."""
        for spec in self.topology.workers:  # a missing model fails before anything starts
            self.session.models(self.topology.name, spec.model)
        if self._spawner is not None:
            # The template's own imports (once a session; slow on a cold page cache) are not
            # the workers' start: their deadline begins once the template can fork.
            self._spawner.wait_ready(Deadline(TEMPLATE_IMPORT_DEADLINE_S))
            self.deadline = Deadline(self.deadline.seconds)
        if self.session.progress is not None:
            label = f"{self.topology.name}-{self.scenario.placement.name} {self.namespace}"
            progress = StartProgress(
                label, self.session.progress, self.session.progress_heartbeat_s
            )
            self._ticker = ProgressTicker(progress, self._progress_sample).start()
        if self.observer is not self.session.observer:
            self.observer.start()
        if self.frontend_mode == OWN:
            self.start_frontend()
        order = self._start_order()
        first = [w for w in self.topology.workers if w.role not in order]
        for spec in first:
            self.workers.append(self._launch(spec))
        if self.topology.public_workers:
            self.listing.start()
        for position, role in enumerate(order):
            self.workers.append(self._launch(self.topology.worker(role)))
            if position + 1 < len(order) and not self._await_turn(self.workers[-1]):
                self.not_started = [
                    diagnosis.held_back(self.topology.worker(r).role, role)
                    for r in order[position + 1 :]
                ]
                break
        return self

    def _start_order(self) -> tuple[str, ...]:
        if self.order is not None:
            return self.order
        return self.scenario.placement.start_order if self.sequential else ()

    def _progress_sample(self) -> Sample:
        """Where each worker's start is now (for the live progress lines)."""
        state = self.observer.state()
        launched = {w.role: w for w in list(self.workers)}
        order = self._start_order()
        samples = []
        for spec in self.topology.workers:
            worker = launched.get(spec.role)
            if worker is None:
                if spec.role in order:  # held back by the start order (else: launching now)
                    waits = order[: order.index(spec.role)]
                    samples.append(
                        WorkerSample(spec.role, None, None, False, False, False, None, waits)
                    )
                continue
            records = self.records(state, worker)
            log = self._milestones.setdefault(spec.role, LogMilestones(worker.proc.log_path))
            samples.append(
                WorkerSample(
                    spec.role,
                    worker.pid,
                    worker.proc.started_mono,
                    worker.proc.alive(),
                    records.serving,
                    records.registered,
                    log.poll(),
                )
            )
        return Sample(
            tuple(samples),
            listed=self.listing.listed_at is not None,
            answered=any(e.status == 200 for e in list(self.client.exchanges)),
        )

    def _launch(self, spec: WorkerSpec) -> Worker:
        process_ports = ProcessPorts.allocate()
        fault = self.faults.get(spec.role)
        site = WorkerSite(
            namespace=self.namespace,
            model_name=self.model_name,
            ports=process_ports,
            etcd=self.session.endpoints.etcd,
            nats=self.session.endpoints.nats,
            tmpdir=self.session.scratch
            / f"{self.namespace[-6:]}-{len(self.workers) + len(self._retired)}",
            media_dir=self.workdir / "media",
            hf_home=self.session.hf_home,
            shared_ports=self._shared_ports,
            deployment_env=self._env,
        )
        command = worker_command(
            self.session.settings.tier,
            self.scenario,
            spec,
            model_path=self.session.models(self.topology.name, spec.model),
            site=site,
            timeout_s=self.deadline.seconds,
            gpus=self._gpus.get(spec.role, ()),
            fault=fault,
            fault_delay_s=self.fault_delay_s,
        )
        log_path = self.workdir / "logs" / f"{spec.role}{self._restart_suffix(spec.role)}.log"
        fork = (  # the template is handed the command whole
            functools.partial(self._spawner.spawn, command, ROOT, log_path)
            if self._spawner is not None
            else None
        )
        proc = ManagedProcess(
            role=spec.role,
            argv=command.argv(),
            env=command.environment(),
            log_path=log_path,
            cwd=ROOT,
            spawn=fork,
        ).start()
        pinned = spec.pin_request_plane and self.request_plane == TCP
        return Worker(spec, proc, process_ports, fault, pinned)

    def _restart_suffix(self, role: str) -> str:
        restarts = sum(1 for w in self._retired if w.role == role)
        return f"-{restarts + 1}" if restarts else ""

    def _await_turn(self, worker: Worker) -> bool:
        """Whether the next worker may start. The layout's order: once this one serves
        (instance in etcd), False if it exited or the start deadline passed (the registration
        wait then reports it). An explicit order: once this one is registered, or after the
        card grace if it waits for peers before it serves (an encoder waits for its PD
        worker); False only if it exited."""
        explicit = self.order is not None
        grace = min(self.session.settings.card_grace, self.deadline.remaining)
        deadline = Deadline(grace) if explicit else self.deadline

        def turn_taken(state: DiscoveryState) -> bool:
            records = self.records(state, worker)
            return records.registered if explicit else records.serving

        def alive() -> None:
            if not worker.proc.alive():
                raise readiness.Exited(worker)

        try:
            taken = self.observer.wait_for(turn_taken, deadline, guard=alive)
        except readiness.Exited:
            return False
        return bool(taken) or explicit

    def start_frontend(self) -> Frontend:
        """This deployment's own frontend, on its fixed port (a second call restarts it)."""
        if self.frontend_mode == SHARED:
            raise ValueError("this deployment uses the session's frontend")
        if self.frontend is not None:
            self.frontend.proc.stop(grace=self.session.settings.stop_grace_s)
        session = self.session
        self.frontend = start_frontend(
            session.endpoints,
            self.workdir,
            session.scratch,
            session.settings.tier,
            http_port=self._frontend_port,
            env=self._env,
            # Its own namespace only: other deployments' models (other planes, maybe) are not
            # its business (measured: a NATS-plane frontend watching every namespace while
            # TCP-plane models of other deployments are registered never answered /live).
            namespace=self.namespace,
        )
        return self.frontend

    def restart_frontend(self) -> float | None:
        """Restart this deployment's own frontend (same address) and wait until it lists the
        model again: seconds from the restart, or None within the list deadline."""
        started = time.monotonic()
        self.start_frontend()
        deadline = Deadline(self.session.settings.list_deadline)
        listed = await_listing(self.client.base_url, self.model_name, True, deadline)
        return None if listed is None else listed - started

    def stop(self) -> None:
        self._stop_progress("stopped before it was ready")
        if self.frontend_mode != SHARED and self.frontend is not None:
            self.frontend.proc.stop(grace=10)
        self.listing.stop()
        if self.observer is not self.session.observer:
            self.observer.stop()
        everyone = [*self.workers, *self._retired, *self.strays]
        stop_all([w.proc for w in everyone], grace=self.session.settings.stop_grace_s)
        ports.release([port for w in everyone for port in w.ports.all()])
        ports.release(list(self._shared_ports.values()))
        if self.frontend_mode != SHARED:
            ports.release([self._frontend_port])
        self.client.close()

    def kill(self, role: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """Signal one worker's process group (SIGKILL: its keys stay until the lease expires;
        SIGTERM: Dynamo's graceful shutdown) and wait up to its stop grace for it to exit;
        still alive then, it gets SIGKILL, as from a supervisor (recorded in `escalated`).
        It is then expected to be gone: verify() does not report its exit."""
        worker = self.worker(role)
        self._killed.add(role)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, sig)
        worker.proc.popen_wait(self.session.settings.stop_grace_s)
        if worker.proc.alive():  # as a supervisor does after its grace period
            self.escalated.append(role)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.proc.popen_wait(self.session.settings.stop_grace_s)

    def restart(self, role: str) -> Worker:
        """Start the worker again, as a real restart would: a new process on new ports. The
        old one must have been stopped (kill); both stay in the record for teardown."""
        old = self.worker(role)
        if old.proc.alive():
            raise RuntimeError(f"'{role}' (pid {old.pid}) is still running: stop it first")
        self._retired.append(old)
        replacement = self._launch(old.spec)
        self.workers[self.workers.index(old)] = replacement
        self._killed.discard(role)
        return replacement

    def add_stray(self, spec: WorkerSpec) -> Worker:
        """Start a worker that is not part of the topology in this namespace (interference:
        a leftover prefill worker, a second worker with another card). It is no worker of the
        deployment: its keys are what the interference check reports, naming it."""
        stray = self._launch(spec)
        self.strays.append(stray)
        return stray

    def await_registered(self, role: str, seconds: float) -> bool:
        """Whether the worker (or stray) serves and has its card(s) within `seconds`."""
        worker = next(w for w in (*self.workers, *self.strays) if w.role == role)
        observer = self.observer
        return bool(
            observer.wait_for(
                lambda state: self.records(state, worker).registered, Deadline(seconds)
            )
        )

    def worker(self, role: str) -> Worker:
        return next(w for w in self.workers if w.role == role)

    def records(self, state: DiscoveryState, worker: Worker) -> checks.WorkerRecords:
        """A worker's keys in this namespace (see checks.records_for)."""
        return judged.worker_records(state, self.namespace, worker, self.workers)

    def discovery_now(self) -> DiscoveryState:
        """This namespace's instances and cards, read from etcd directly (no watch lag)."""
        ns = self.namespace
        return self.observer.read_now([f"v1/instances/{ns}/", f"v1/mdc/{ns}/"])

    @property
    def request_plane(self) -> str:
        """What the workers serve requests on: the era's (an older release), else the planes'."""
        era = self.topology.era
        return era.request_plane if era else self.planes.request

    def loopback_addresses(self) -> set[str]:
        """What advertised_addresses() must be: 127.0.0.1 on the TCP request plane; nothing
        on NATS, where workers are reached by subject, not address."""
        return {"127.0.0.1"} if self.request_plane == TCP else set()

    def listed_models(self) -> set[str]:
        """The model ids GET /v1/models lists now."""
        data = self.client.get("/v1/models").json().get("data", [])
        return {m.get("id") for m in data}

    def advertised_addresses(self) -> set[str]:
        """Every IPv4 address the workers advertise in etcd (read directly, now)."""
        ns = self.namespace
        state = self.discovery_now()
        return set().union(*checks.advertised_addresses(state, ns).values())

    def card(self, role: str) -> ModelCard | None:
        state = self.observer.state()
        return self.records(state, self.worker(role)).card

    # -- readiness -------------------------------------------------------------------------
    def _stop_progress(self, outcome: str) -> None:
        if self._ticker is not None:
            self._ticker.stop(outcome)

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
        self.client.mark_ready()
        return self

    def _roles_without_card_in_etcd(self) -> list[str]:
        """Roles with no card on a serving instance of theirs, now."""
        state = self.discovery_now()
        # A role is present once one of its processes has a card (one gateway child serves).
        return [w.role for w in self.workers if w.registers and not self.records(state, w).cards]

    # -- traffic and verdict ---------------------------------------------------------------
    def send(self, kind: str, model: str | None = None) -> Reply:
        """A request of `kind` for the topology's model (or another name it serves, a LoRA)."""
        reply = send(kind, self.client, model or self.model_name)
        self.replies.append(reply)
        return reply

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

    def timeline(self) -> list[WorkerTimeline]:
        return worker_timelines(self)

    @property
    def listed_at(self) -> float | None:
        """Wall time the model first appeared in GET /v1/models (None: not seen listed)."""
        return self.listing.listed_at

    @property
    def ready_when_listed(self) -> str:
        return self.listing.ready_when_listed


def dynamo_version() -> str:
    """The release the run drives (see harness.runtime.dynamo_env)."""
    return dynamo_env.active().version
