"""Observing a deployment: its records in discovery, what the frontend lists, its timeline."""

from __future__ import annotations

from harness.common.deadline import Deadline
from harness.deployment.options import (
    TCP,
)
from harness.deployment.timeline import WorkerTimeline, worker_timelines
from harness.deployment.worker import Worker
from harness.discovery.observer import DiscoveryState
from harness.judge import checks
from harness.judge import deployment as judged
from harness.model.records import ModelCard


class Observing:
    """The observing side of a Deployment (a mixin: the state lives in Deployment.__init__)."""

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

    def _roles_without_card_in_etcd(self) -> list[str]:
        """Roles with no card on a serving instance of theirs, now."""
        state = self.discovery_now()
        # A role is present once one of its processes has a card (one gateway child serves).
        return [w.role for w in self.workers if w.registers and not self.records(state, w).cards]

    def timeline(self) -> list[WorkerTimeline]:
        return worker_timelines(self)

    @property
    def listed_at(self) -> float | None:
        """Wall time the model first appeared in GET /v1/models (None: not seen listed)."""
        return self.listing.listed_at

    @property
    def ready_when_listed(self) -> str:
        return self.listing.ready_when_listed
