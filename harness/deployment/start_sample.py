"""Where a deployment's start is now, for its live progress lines: sampled from the parts it
owns (what discovery holds, its listing watch, its client), never from the deployment."""

from __future__ import annotations

from dataclasses import dataclass, field

from discovery_harness.deployment.listing import ListingWatch
from discovery_harness.deployment.plan import DeploymentPlan
from discovery_harness.deployment.progress import LogMilestones, Sample
from discovery_harness.deployment.roster import sample_start
from discovery_harness.deployment.timeline import first_answer
from discovery_harness.deployment.view import DeploymentView
from discovery_harness.serving.http_client import RecordingClient


@dataclass
class StartSampler:
    """Called by the ProgressTicker; keeps each worker's log reader between samples."""

    plan: DeploymentPlan
    view: DeploymentView
    listing: ListingWatch
    client: RecordingClient
    logs: dict[str, LogMilestones] = field(default_factory=dict)

    def __call__(self) -> Sample:
        return sample_start(
            self.plan.topology.workers,
            self.plan.start_order,
            self.view.roster(),
            self.view.observer.state(),
            self.logs,
            listed=self.listing.listed_at is not None,
            answered=first_answer(list(self.client.exchanges)) is not None,
        )
