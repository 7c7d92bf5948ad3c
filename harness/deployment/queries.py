"""What a test asks of a running deployment besides its verdict: is a worker registered, which
addresses and models are advertised, a worker's card; restarting its own frontend. A part of
Deployment (discovery_harness.deployment.core), kept apart so that file holds the lifecycle."""

from __future__ import annotations

import time

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment.listing import await_listing
from discovery_harness.deployment.options import TCP
from discovery_harness.deployment.plan import DeploymentPlan
from discovery_harness.deployment.processes import Processes
from discovery_harness.deployment.roster import Roster
from discovery_harness.deployment.session import Session
from discovery_harness.deployment.view import DeploymentView
from discovery_harness.deployment.worker import Worker
from discovery_harness.discovery.observer import DiscoveryObserver, DiscoveryState
from discovery_harness.judge import checks
from discovery_harness.model.records import ModelCard
from discovery_harness.serving.http_client import RecordingClient
from discovery_harness.serving.listing import listed_ids


class DeploymentQueries:
    """Reads and waits on a deployment's discovery state and frontend (mixed into Deployment)."""

    plan: DeploymentPlan
    session: Session
    processes: Processes
    observer: DiscoveryObserver
    client: RecordingClient
    view: DeploymentView

    def roster(self) -> Roster:
        return self.view.roster()

    def worker(self, role: str) -> Worker:
        return self.processes.worker(role)

    def records(self, state: DiscoveryState, worker: Worker) -> checks.WorkerRecords:
        return self.roster().records(state, worker)  # see checks.records_for

    def discovery_now(self) -> DiscoveryState:
        """This namespace's instances and cards, read from etcd directly (no watch lag)."""
        return self.view.discovery_now()

    def await_registered(self, role: str, seconds: float) -> bool:
        """Whether the worker (or stray) serves and has its card(s) within `seconds`."""
        processes = self.processes
        worker = next(w for w in (*processes.workers, *processes.strays) if w.role == role)
        roster = self.roster()
        return bool(
            self.observer.wait_for(
                lambda state: roster.records(state, worker).registered, Deadline(seconds)
            )
        )

    def loopback_addresses(self) -> set[str]:
        """What advertised_addresses() must be: 127.0.0.1 on the TCP request plane; nothing
        on NATS, where workers are reached by subject, not address."""
        return {"127.0.0.1"} if self.plan.request_plane == TCP else set()

    def listed_models(self) -> set[str]:
        """The model ids GET /v1/models lists now."""
        return set(listed_ids(self.client.get("/v1/models").json()))

    def advertised_addresses(self) -> set[str]:
        """Every IPv4 address the workers advertise in etcd (read directly, now)."""
        return set().union(
            *checks.advertised_addresses(self.discovery_now(), self.plan.namespace).values()
        )

    def card(self, role: str) -> ModelCard | None:
        return self.records(self.observer.state(), self.worker(role)).card

    def restart_frontend(self) -> float | None:
        """Restart this deployment's own frontend (same address) and wait until it lists the
        model again: seconds from the restart, or None within the list deadline."""
        started = time.monotonic()
        self.processes.start_frontend()
        deadline = Deadline(self.session.settings.list_deadline)
        listed = await_listing(self.client.base_url, self.plan.model_name, True, deadline)
        return None if listed is None else listed - started
