"""Which keys in discovery are whose: a deployment's namespace and its workers, as values.

The waits, the timeline and the verdict all ask "what has this worker registered?"; they take
a `Roster` (not the deployment), built from the workers running at that moment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from discovery_harness.deployment.progress import LogMilestones, Sample, WorkerSample
from discovery_harness.deployment.worker import Worker
from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge import deployment as judged
from discovery_harness.judge.checks import WorkerRecords
from discovery_harness.model.topology import WorkerSpec
from discovery_harness.serving.model_facts import NO_FACTS, ModelFacts


@dataclass(frozen=True)
class Roster:
    namespace: str
    workers: tuple[Worker, ...]

    @classmethod
    def of(cls, namespace: str, workers: Sequence[Worker]) -> Roster:
        return cls(namespace, tuple(workers))

    def records(self, state: DiscoveryState, worker: Worker) -> WorkerRecords:
        """A worker's keys in the namespace; the ports its peers were given are theirs (see
        discovery_harness.judge.deployment.worker_records)."""
        return judged.worker_records(state, self.namespace, worker, self.workers)

    @property
    def registering(self) -> tuple[Worker, ...]:
        return tuple(w for w in self.workers if w.registers)

    def served_model(self) -> ModelFacts:
        """The model as the topology serves it: the public worker's (they serve one model),
        whose context length is the smallest any registering worker serves (a request passes
        through each of them); none known before they started."""
        public = [w for w in self.workers if w.expected is not None and w.expected.public]
        if not public:
            return NO_FACTS
        serving = [w for w in self.registering if w.context_length is not None]
        if len({w.context_length for w in serving}) < 2:
            return public[0].model
        least = min(serving, key=lambda w: w.context_length or 0)
        sources = ", ".join(f"{w.role} {w.context_source}" for w in serving)
        return dataclasses.replace(
            public[0].model,
            context_length=least.context_length,
            context_source=f"the smallest of its workers': {sources}",
        )

    def without_card(self, state: DiscoveryState) -> list[str]:
        """Roles with no card on a serving instance of theirs (a role is present once one of
        its processes has a card: one gateway child serves)."""
        return [w.role for w in self.registering if not self.records(state, w).cards]


def sample_start(
    specs: Sequence[WorkerSpec],
    order: tuple[str, ...],
    roster: Roster,
    state: DiscoveryState,
    logs: dict[str, LogMilestones],
    *,
    listed: bool,
    answered: bool,
) -> Sample:
    """Where each worker's start is now (for the live progress lines); `logs` keeps each
    worker's log reader between samples."""
    launched = {w.role: w for w in roster.workers}
    samples = []
    for spec in specs:
        worker = launched.get(spec.role)
        if worker is None:
            if spec.role in order:  # held back by the start order (else: launching now)
                waits = order[: order.index(spec.role)]
                samples.append(
                    WorkerSample(spec.role, None, None, False, False, False, None, waits)
                )
            continue
        records = roster.records(state, worker)
        log = logs.setdefault(spec.role, LogMilestones(worker.proc.log_path))
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
    return Sample(tuple(samples), listed=listed, answered=answered)
