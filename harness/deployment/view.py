"""What a deployment's workers hold in discovery, read from its observer: one object that its
parts (the listing watch, the frontend agreement, the served-wait) and the deployment itself
read, so that none of them calls back into the deployment that owns them."""

from __future__ import annotations

from dataclasses import dataclass

from discovery_harness.deployment import diagnosis
from discovery_harness.deployment.processes import Processes
from discovery_harness.deployment.roster import Roster
from discovery_harness.discovery.observer import DiscoveryObserver, DiscoveryState


@dataclass(frozen=True)
class DeploymentView:
    """The deployment's namespace as its observer sees it, over the workers running now
    (read from its processes at each call: a restart replaces a worker)."""

    observer: DiscoveryObserver
    namespace: str
    processes: Processes

    def roster(self) -> Roster:
        return Roster.of(self.namespace, self.processes.workers)

    def discovery_now(self) -> DiscoveryState:
        """This namespace's instances and cards, read from etcd directly (no watch lag)."""
        ns = self.namespace
        return self.observer.read_now([f"v1/instances/{ns}/", f"v1/mdc/{ns}/"])

    def missing_cards(self) -> list[str]:
        """Roles whose card is missing from etcd now (read directly): the topology is not
        complete yet."""
        return self.roster().without_card(self.discovery_now())

    def keys_summary(self) -> str:
        """The namespace's keys as the watch holds them (for a failure message)."""
        return diagnosis.keys_summary(self.observer.state(), self.namespace)
