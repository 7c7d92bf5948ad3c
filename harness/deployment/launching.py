"""Launching a deployment's processes: its workers (at once, in a start order, or one at a
time), its own frontend, restarts, kills, strays and stops."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from pathlib import Path
from typing import Self

from harness.common.deadline import Deadline
from harness.deployment import diagnosis, readiness
from harness.deployment.listing import await_listing
from harness.deployment.options import (
    OWN,
    SHARED,
    TCP,
)
from harness.deployment.progress import (
    LogMilestones,
    ProgressTicker,
    Sample,
    StartProgress,
    WorkerSample,
)
from harness.deployment.worker import Worker
from harness.discovery.observer import DiscoveryState
from harness.model.topology import WorkerSpec
from harness.processes import ports
from harness.processes.loopback import ProcessPorts
from harness.processes.managed import ManagedProcess, stop_all
from harness.runtime import models
from harness.runtime.frontend import Frontend, start_frontend
from harness.runtime.launch import WorkerSite, worker_command
from harness.runtime.spawn import TEMPLATE_IMPORT_DEADLINE_S
from harness.serving import model_facts

ROOT = Path(__file__).resolve().parents[2]


class Launching:
    """The process side of a Deployment (a mixin: the state lives in Deployment.__init__)."""

    def start(self) -> Self:
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
        model_path = self.session.models(self.topology.name, spec.model)
        command = worker_command(
            self.session.settings.tier,
            self.scenario,
            spec,
            model_path=model_path,
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
        facts = model_facts.read(models.locate(model_path), command.dynamo_argv)
        return Worker(spec, proc, process_ports, fault, pinned, facts)

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

    def _stop_progress(self, outcome: str) -> None:
        if self._ticker is not None:
            self._ticker.stop(outcome)
