"""Deploy one topology against the session's etcd, NATS and frontend, and judge it.

A Deployment is its plan (discovery_harness.deployment.plan: every value, computed before anything
starts), its processes (discovery_harness.deployment.processes), what it observes, and one verdict.
Callers read its owners (deployment.plan.namespace, deployment.processes.workers), and what it
owns reads its DeploymentView (discovery_harness.deployment.view), never the deployment.
It starts every worker (some wait for their peers before registering), waits on etcd watch
events until each has its instance and model card, waits until the frontend lists each public
model and serves it, then lets the test send requests. The verdict is reached once (a failed
readiness, or the first verify()) and kept: the fixture reads it at teardown. Every finding is
a `Violation`; `ContractFailure` carries all of them at once.
"""

from __future__ import annotations

import functools
import signal
import time
from typing import Any, Self

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment import (
    answer_cause,
    canary,
    diagnosis,
    frontend_agreement,
    health_verdict,
    readiness,
)
from discovery_harness.deployment.frontend_log import FrontendLogWindow
from discovery_harness.deployment.listing import ListingWatch
from discovery_harness.deployment.options import LATE, OWN
from discovery_harness.deployment.plan import DeployOptions, SessionFacts, plan
from discovery_harness.deployment.processes import Processes
from discovery_harness.deployment.progress import ProgressTicker, StartProgress
from discovery_harness.deployment.queries import DeploymentQueries
from discovery_harness.deployment.self_description import SelfDescription
from discovery_harness.deployment.session import Session
from discovery_harness.deployment.start_sample import StartSampler
from discovery_harness.deployment.timeline import WorkerTimeline, worker_timelines
from discovery_harness.deployment.view import DeploymentView
from discovery_harness.deployment.worker import Worker
from discovery_harness.discovery.observer import DiscoveryObserver
from discovery_harness.discovery.sources import FileSource
from discovery_harness.judge import deployment as judged
from discovery_harness.judge.verdict import Verdict, set_aside_known
from discovery_harness.model import stand_in_blame
from discovery_harness.model.events import LISTED, Events
from discovery_harness.model.topology import Scenario, Topology, WorkerSpec
from discovery_harness.model.violations import (
    MISFIT,
    NEVER_LISTED,
    REGISTERED_UNEXPECTEDLY,
    START_FAILED,
    WORKER_EXITED,
    Violation,
)
from discovery_harness.processes import ports
from discovery_harness.runtime import dynamo_env
from discovery_harness.runtime.spawn import TEMPLATE_IMPORT_DEADLINE_S
from discovery_harness.serving.http_client import RecordingClient
from discovery_harness.serving.requests import DECLARED, Reply, send
from discovery_harness.serving.shapes import DEFAULT
from discovery_harness.serving.worker_health import HealthWatch


class Deployment(DeploymentQueries):
    """One topology deployed: plan + processes + what was observed + one verdict."""

    def __init__(self, what: Topology | Scenario, session: Session, **options: Any) -> None:
        facts = SessionFacts(
            settings=session.settings,
            workdir=session.workdir,
            shared_frontend_port=session.frontend.port,
            gpu_share=session.gpu_share,
            template=session.spawner is not None,
        )
        # An option given as None takes its default (faults=None: none).
        given = {name: value for name, value in options.items() if value is not None}
        self.plan = plan(what, DeployOptions(**given), facts, ports.allocate)
        self.session = session
        self.processes = Processes(self.plan, session)
        self.observer = (
            DiscoveryObserver(FileSource(self.plan.file_store))
            if self.plan.file_store is not None
            else session.observer
        )
        self.view = DeploymentView(self.observer, self.plan.namespace, self.processes)
        self.client = RecordingClient(self.plan.base_url)
        self.replies: list[Reply] = []
        self.frontend_log = FrontendLogWindow.from_now(self.processes)
        self.listing = ListingWatch(self.plan.base_url, self.plan.model_name, self.view)
        self.deadline = Deadline(self.plan.register_deadline_s)
        self.frontend_agreement = frontend_agreement.for_plan(self.plan, self.view)
        self.not_started: list[Violation] = []  # held back by a start order that broke
        # Every worker's /health and /live, spawn to stop (etcd's cards read at each first
        # ready answer: the proof of a ready-before-card).
        self.health = HealthWatch(
            functools.partial(health_verdict.card_keys_now, self.observer, self.plan.namespace)
        )
        self.self_description = SelfDescription(self.plan.topology.self_description_judged)
        self.canary_waited: dict[str, str] = {}  # role: the canary proof waited for (canary.py)
        self._ticker: ProgressTicker | None = None
        self._ready_known: tuple[tuple[Violation, str], ...] = ()
        self._verdict: Verdict | None = None
        self.events = Events()  # moments a known violation's window starts from
        self.verdict_at: float | None = None  # wall time of the verdict (the report's mark)

    def __repr__(self) -> str:
        return f"<deployment {self.plan.namespace}>"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        """Stopped in the background: the session waits for every stop before it ends."""
        self.stop_in_background()

    def start(self) -> Self:
        """Launch every worker; with a start order, the ordered ones one at a time, each
        serving (the layout's order) or registered (a test's order) before the next."""
        plan, session = self.plan, self.session
        for spec in plan.topology.workers:  # a missing model fails before anything starts
            session.models(plan.topology.name, spec.model)
        if plan.forked and session.spawner is not None:
            # The template's own imports (once a session; slow on a cold page cache) are not
            # the workers' start: their deadline begins once the template can fork.
            session.spawner.wait_ready(Deadline(TEMPLATE_IMPORT_DEADLINE_S))
            self.deadline = Deadline(self.deadline.seconds)
        if session.progress is not None:
            label = f"{plan.topology.name}-{plan.scenario.placement.name} {plan.namespace}"
            progress = StartProgress(label, session.progress, session.progress_heartbeat_s)
            sampler = StartSampler(plan, self.view, self.listing, self.client)
            self._ticker = ProgressTicker(progress, sampler).start()
        if self.observer is not session.observer:
            self.observer.start()
        if plan.frontend_mode == OWN:
            self.processes.start_frontend()
        workers = self.processes.workers
        for role in plan.first_started:
            workers.append(self._watched(self.processes.launch(plan.topology.worker(role))))
        if plan.topology.public_workers:
            self.listing.start()
        order = plan.start_order
        for position, role in enumerate(order):
            workers.append(self._watched(self.processes.launch(plan.topology.worker(role))))
            if position + 1 < len(order) and not readiness.await_turn(
                self.observer,
                self.roster(),
                workers[-1],
                plan.explicit_order,
                self.deadline,
                session.settings.card_grace,
            ):
                self.not_started = [diagnosis.held_back(r, role) for r in order[position + 1 :]]
                break
            self.frontend_agreement.during_start(role, order[position + 1 :])
        return self

    def await_ready(self) -> Self:
        """Every worker registered as declared and every public model listed, or fail."""
        __tracebackhide__ = True  # a failure shows the test's line and the violations
        try:
            verdict = self._set_aside_known(self._readiness())
        except BaseException as error:
            self._stop_progress(f"start interrupted: {type(error).__name__}")
            self._verdict = Verdict()  # interrupted: nothing to judge at teardown
            raise
        if verdict.violations:
            kinds = ", ".join(sorted({v.kind for v in verdict.violations}))
            self._stop_progress(f"not ready: {len(verdict.violations)} violation(s) ({kinds})")
            self._settle(verdict)
            verdict.raise_if_failed(self.plan.topology.name)
        self._ready_known = verdict.known
        self._stop_progress("ready")
        if not any(v.kind == NEVER_LISTED for v, _ in verdict.known):
            # A model known never to be listed is never ready: its answers are that finding's.
            self.client.mark_ready()
        return self

    def _readiness(self) -> list[Violation]:
        """Everything readiness found, known violations included."""
        settings = self.session.settings
        violations = readiness.await_registration(
            self.observer, self.roster(), self.deadline, settings.card_grace
        )
        violations += self.not_started
        grace = min(settings.card_grace, self.deadline.remaining)
        readiness.await_absent_settled(self.observer, self.roster(), grace)
        if self.plan.frontend_mode == LATE and not violations:
            self.processes.start_frontend()  # workers first: it must discover what is there
        state = self.observer.state()
        plan, processes = self.plan, self.processes
        violations += judged.card_violations(
            state, plan.namespace, plan.model_name, processes.workers, processes.strays
        )
        registered = not any(v.kind in START_FAILED for v in violations)
        if registered and self.plan.topology.public_workers:
            serving = self._serving()
            violations += readiness.await_served(
                self.listing, serving, Deadline(settings.list_deadline)
            )
            if self.listing.listed_at is not None:
                self.events.note(LISTED, at=self.listing.listed_at)
        elif not registered:  # listed although a worker never registered
            violations += readiness.listed_early(self.listing, self._serving(), [])
        violations += self.frontend_agreement.after_ready(not violations)
        if registered and self.plan.topology.health_judged:
            # Registered and served: each worker's /health has the card grace to say ready.
            anyway = {v.role or "" for v in violations if v.kind == REGISTERED_UNEXPECTEDLY}
            deadline = Deadline(settings.card_grace)
            health_verdict.await_ready(self.health, self.processes.workers, deadline, anyway)
            unready = self._health(health_verdict.AT_READINESS)
            violations += unready + (
                canary.beside_unready(self.processes.workers, unready, self.canary_waited)
                if unready
                else []
            )
        found_exits = {v.role for v in violations if v.kind in (WORKER_EXITED, MISFIT)}
        state = self.observer.state()
        violations += [
            diagnosis.exited(w, state, self.plan.namespace, "readiness (it had registered)")
            for w in self.processes.workers
            if not w.proc.alive() and w.role not in found_exits
        ]
        misfits = [v for v in violations if v.kind == MISFIT]
        if misfits:
            return misfits  # a pair that cannot run: that, not what followed
        failed = answer_cause.last_failed_probe(self.client.exchanges)
        return answer_cause.with_evidence(
            violations, failed, self.frontend_log, self.roster(), state
        )

    def _health(self, kinds: tuple[str, ...]) -> list[Violation]:
        """The readiness contract's violations of `kinds` (discovery_harness.judge.health)."""
        if not self.plan.topology.health_judged:
            return []
        waited = f"{self.session.settings.card_grace:.0f} s after it registered and was served"
        return health_verdict.violations(self.health, self.observer, self.roster(), kinds, waited)

    def _serving(self) -> readiness.Serving:
        public = self.plan.topology.public_workers
        return readiness.Serving(
            model_name=self.plan.model_name,
            public_role=public[0].role if public else "",
            kind=self.plan.topology.requests[0],
            workers=tuple(self.processes.workers),
            client=self.client,
            discovered=self.view,
            log_tail=self.frontend_log.tail,
        )

    def send(
        self, kind: str, model: str | None = None, shape: str = DEFAULT, purpose: str = DECLARED
    ) -> Reply:
        """A request of `kind` in `shape` for the topology's model (or another name it serves,
        a LoRA), judged against the model its workers serve too."""
        facts = self.roster().served_model()
        reply = send(kind, self.client, model or self.plan.model_name, shape, facts, purpose)
        self.replies.append(reply)
        return reply

    def verdict(self) -> Verdict:
        """The deployment's verdict: readiness's if it failed, else everything wrong since
        readiness, judged at the first call and kept."""
        if self._verdict is None:
            self._settle(self._set_aside_known(self._after_ready(), self._ready_known))
        assert self._verdict is not None
        return self._verdict

    @property
    def judged(self) -> bool:
        """Whether the verdict was reached (a failed readiness, or verdict() / verify())."""
        return self._verdict is not None

    def verify(self) -> None:
        """Raise ContractFailure for anything wrong (the verdict, reached now if not yet)."""
        __tracebackhide__ = True
        self.verdict().raise_if_failed(self.plan.topology.name)

    @property
    def found(self) -> tuple[Violation, ...]:
        """Every violation the verdict holds (for the history and the report)."""
        return self._verdict.violations if self._verdict is not None else ()

    @property
    def known_seen(self) -> tuple[tuple[Violation, str], ...]:
        return self._verdict.known if self._verdict is not None else self._ready_known

    def _after_ready(self) -> list[Violation]:
        state = self.observer.state()
        violations = [
            diagnosis.exited(w, state, self.plan.namespace, "nothing (it had registered)")
            for w in self.processes.exited_unexpectedly()
        ] + self.frontend_agreement.take()
        violations += self._health(health_verdict.AT_VERDICT)
        now = self.discovery_now()  # etcd read once for the verdict's checks
        violations += self.self_description.verdict(self.roster(), now)
        violations += canary.violations(self.processes.workers, self.canary_waited)
        violations += judged.after_ready(
            now,
            self.plan.namespace,
            self.plan.model_name,
            self.processes.workers,
            self.processes.strays,
            self.client.exchanges,
            self.replies,
            self.frontend_log.text(),
        )
        failed = answer_cause.failed_after_ready(self.client.exchanges, self.replies)
        return answer_cause.with_evidence(violations, failed, self.frontend_log, self.roster(), now)

    def _set_aside_known(
        self, violations: list[Violation], known: tuple[tuple[Violation, str], ...] = ()
    ) -> Verdict:
        """Set aside the violations this Dynamo release is declared to show (strict: not for
        the roles given a fault, or for any role when none is)."""
        release = dynamo_env.active().version  # the release the run drives
        violations = stand_in_blame.reclassify(violations)  # the harness's own, never set aside
        known_here = self.plan.topology.known_violations
        strict = (frozenset(self.plan.faults) or True) if self.plan.strict else False
        verdict = set_aside_known(violations, known_here, release, strict, self.events)
        return Verdict(verdict.violations, (*known, *verdict.known))

    def _settle(self, verdict: Verdict) -> None:
        self._verdict = verdict
        self.verdict_at = time.time()

    def timeline(self) -> list[WorkerTimeline]:
        return worker_timelines(
            self.observer,
            self.roster(),
            self.listing.listed_at,
            self.client.exchanges,
            self.health.health(),
        )

    def _stop_progress(self, outcome: str) -> None:
        if self._ticker is not None:
            self._ticker.stop(outcome)

    def kill(self, role: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """See Processes.kill: signal one worker, SIGKILL after its stop grace."""
        self.health.stopping(self.worker(role).pid)
        self.processes.kill(role, sig)

    def restart(self, role: str) -> Worker:
        return self._watched(self.processes.restart(role))

    def add_stray(self, spec: WorkerSpec) -> Worker:
        """A worker outside the topology in this namespace: its keys are what the
        interference check reports, naming it."""
        return self._watched(self.processes.add_stray(spec))

    def _watched(self, worker: Worker) -> Worker:
        """A worker just launched, its health observed from now."""
        self.health.watch(worker.role, worker.pid, worker.ports.system, worker.proc.started_wall)
        return worker

    def stop(self) -> None:
        """Stop everything now, in this thread."""
        self._stop_watching()
        self.processes.stop()

    def stop_in_background(self) -> None:
        """Stop what watches it now (quick), and hand its processes (Dynamo's graceful
        shutdown takes seconds) to the session's background stops, which the session drains
        before it ends (discovery_harness.deployment.stops); handed over whatever the
        quick part raised."""
        try:
            self._stop_watching()
        finally:
            self.session.stops.submit(self.plan.namespace, self.processes.stop)

    def _stop_watching(self) -> None:
        """Its progress lines, health and listing watches, own observer and client: what
        reads the processes, ended before they stop (a worker's shutdown is no finding)."""
        self._stop_progress("stopped before it was ready")
        self.health.stop()
        self.listing.stop()
        if self.observer is not self.session.observer:
            self.observer.stop()
        self.client.close()
