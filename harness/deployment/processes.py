"""A deployment's processes: its workers (and strays), its own frontend; launch, kill,
restart, stop. Nothing here waits on discovery: the waits take what they need as values."""

from __future__ import annotations

import contextlib
import functools
import os
import signal

from discovery_harness.deployment.options import SHARED, TCP
from discovery_harness.deployment.plan import DeploymentPlan
from discovery_harness.deployment.session import Session
from discovery_harness.deployment.worker import Worker
from discovery_harness.model.topology import WorkerSpec
from discovery_harness.processes import ports
from discovery_harness.processes.loopback import ProcessPorts
from discovery_harness.processes.managed import ManagedProcess, stop_all
from discovery_harness.runtime import models
from discovery_harness.runtime.frontend import Frontend, start_frontend
from discovery_harness.runtime.launch import WorkerSite, worker_command
from discovery_harness.serving import model_facts


class Processes:
    """Every process a deployment started, by role; what was killed on purpose and what had
    to be SIGKILLed after its stop grace."""

    def __init__(self, plan: DeploymentPlan, session: Session) -> None:
        self.plan = plan
        self.session = session
        self.workers: list[Worker] = []
        self.retired: list[Worker] = []  # workers replaced by a restart
        self.strays: list[Worker] = []  # started into the namespace, not of the topology
        self.killed: set[str] = set()  # roles stopped on purpose (their exit is no finding)
        # Roles still alive a stop grace after kill(): SIGKILLed then (reported by the edges).
        self.escalated: list[str] = []
        self.frontend: Frontend | None = session.frontend if plan.frontend_mode == SHARED else None

    def worker(self, role: str) -> Worker:
        return next(w for w in self.workers if w.role == role)

    def launch(self, spec: WorkerSpec) -> Worker:
        """Start one worker on ports of its own (not yet one of `workers`: the caller says
        what it is)."""
        plan, session = self.plan, self.session
        process_ports = ProcessPorts.allocate()
        fault = plan.faults.get(spec.role)
        site = WorkerSite(
            namespace=plan.namespace,
            model_name=plan.model_name,
            ports=process_ports,
            etcd=session.endpoints.etcd,
            nats=session.endpoints.nats,
            tmpdir=session.scratch
            / f"{plan.namespace[-6:]}-{len(self.workers) + len(self.retired)}",
            media_dir=plan.workdir / "media",
            hf_home=session.hf_home,
            shared_ports=dict(plan.shared_ports),
            deployment_env=dict(plan.env),
        )
        model_path = session.models(plan.topology.name, spec.model)
        command = worker_command(
            session.settings.tier,
            plan.scenario,
            spec,
            model_path=model_path,
            site=site,
            timeout_s=plan.register_deadline_s,
            gpus=plan.gpus.get(spec.role, ()),
            fault=fault,
            fault_delay_s=plan.fault_delay_s,
        )
        log_path = plan.workdir / "logs" / f"{spec.role}{self._restart_suffix(spec.role)}.log"
        spawner = session.spawner if plan.forked else None
        fork = (  # the template is handed the command whole
            functools.partial(spawner.spawn, command, plan.workdir, log_path)
            if spawner is not None
            else None
        )
        proc = ManagedProcess(
            role=spec.role,
            argv=command.argv(),
            env=command.environment(),
            log_path=log_path,
            cwd=plan.workdir,
            spawn=fork,
        ).start()
        pinned = spec.pin_request_plane and plan.request_plane == TCP
        facts = model_facts.read(models.locate(model_path), command.dynamo_argv)
        return Worker(spec, proc, process_ports, fault, pinned, facts, command.dynamo_argv)

    def _restart_suffix(self, role: str) -> str:
        restarts = sum(1 for w in self.retired if w.role == role)
        return f"-{restarts + 1}" if restarts else ""

    def start_frontend(self) -> Frontend:
        """The deployment's own frontend, on its planned port (a second call restarts it)."""
        if self.plan.frontend_mode == SHARED:
            raise ValueError("this deployment uses the session's frontend")
        session = self.session
        if self.frontend is not None:
            self.frontend.proc.stop(grace=session.settings.stop_grace_s)
        self.frontend = start_frontend(
            session.endpoints,
            self.plan.workdir,
            session.scratch,
            session.settings.tier,
            http_port=self.plan.frontend_port,
            env=dict(self.plan.env),
            # Its own namespace only: other deployments' models (other planes, maybe) are not
            # its business (measured: a NATS-plane frontend watching every namespace while
            # TCP-plane models of other deployments are registered never answered /live).
            namespace=self.plan.namespace,
        )
        return self.frontend

    def kill(self, role: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """Signal one worker's process group (SIGKILL: its keys stay until the lease expires;
        SIGTERM: Dynamo's graceful shutdown) and wait up to its stop grace for it to exit;
        still alive then, it gets SIGKILL, as from a supervisor (recorded in `escalated`).
        It is then expected to be gone: the verdict does not report its exit."""
        worker = self.worker(role)
        grace = self.session.settings.stop_grace_s
        self.killed.add(role)
        worker.proc.mark_signalled()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, sig)
        worker.proc.popen_wait(grace)
        if worker.proc.alive():  # as a supervisor does after its grace period
            self.escalated.append(role)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.proc.popen_wait(grace)

    def restart(self, role: str) -> Worker:
        """Start the worker again, as a real restart would: a new process on new ports. The
        old one must have been stopped (kill); both stay in the record for teardown."""
        old = self.worker(role)
        if old.proc.alive():
            raise RuntimeError(f"'{role}' (pid {old.pid}) is still running: stop it first")
        self.retired.append(old)
        replacement = self.launch(old.spec)
        self.workers[self.workers.index(old)] = replacement
        self.killed.discard(role)
        return replacement

    def add_stray(self, spec: WorkerSpec) -> Worker:
        """Start a worker that is not part of the topology in this namespace (interference)."""
        stray = self.launch(spec)
        self.strays.append(stray)
        return stray

    def exited_unexpectedly(self) -> list[Worker]:
        """Workers no longer running that nobody stopped."""
        return [w for w in self.workers if not w.proc.alive() and w.role not in self.killed]

    def stop(self) -> None:
        """Stop every process it started (its own frontend first) and release their ports;
        hurried once the session ends (BackgroundStops.drain)."""
        grace, hurry = self.session.settings.stop_grace_s, self.session.stops.ending
        if self.plan.frontend_mode != SHARED and self.frontend is not None:
            self.frontend.proc.stop(grace=10, hurry=hurry)
        everyone = [*self.workers, *self.retired, *self.strays]
        stop_all([w.proc for w in everyone], grace=grace, hurry=hurry)
        ports.release([port for w in everyone for port in w.ports.all()])
        ports.release(self.plan.held_ports())
