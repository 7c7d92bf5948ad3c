"""Which topology and role each worker found in discovery is, read from its card.

A deployment the harness did not start comes with no declaration. Its workers say what they
are in their cards (component, worker type, model type, needs); a worker without a card says
only its component. The catalogue topology that explains the namespace best gives each one a
role and so a contract: +1 for a card that matches a role exactly, -1 for a card that matches
none, -2 for a process no role accounts for and for a role no process fills; ties go to the
topology with more exact cards, then to the catalogue's order. A card is believed first: a
lone decode card that needs prefill is a decode worker missing its peer, not an aggregated
worker with a wrong card.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from discovery_harness.judge.checks import compare_card
from discovery_harness.model.contract import ExpectedCard
from discovery_harness.model.records import Instance, ModelCard
from discovery_harness.model.topology import Topology, WorkerSpec

UNEXPLAINED_PENALTY = 2


@dataclass
class FoundWorker:
    """One serving process seen in discovery: its generate instance and its card (if any)."""

    instance: Instance
    card: ModelCard | None
    first_seen: float  # wall time the audit first saw its instance
    role: str = "?"
    expected: ExpectedCard | None = None

    @property
    def component(self) -> str:
        return self.instance.component

    @property
    def pid(self) -> int:
        return 0  # not known from discovery; `identity` names it instead

    @property
    def tcp_port(self) -> int | None:
        return self.instance.tcp_port

    @property
    def registrants(self) -> int:
        return 1

    @property
    def internal_endpoint(self) -> bool:
        return False  # a found worker serves a generate endpoint of its own

    @property
    def start_paths(self) -> tuple[str, ...]:
        return ()  # not known from discovery

    @property
    def identity(self) -> str:
        return f"instance {self.instance.instance_id:x} at {self.address}"

    @property
    def address(self) -> str:
        return self.instance.transport.split("/", 1)[0] or "(no address)"


@dataclass
class Recognition:
    topology: Topology | None
    score: int = -(10**6)
    exact: int = 0  # cards matching their role exactly (the tie-break: believe the cards)
    roles: dict[str, WorkerSpec] = field(default_factory=dict)  # instance key -> its role
    empty_roles: tuple[str, ...] = ()  # roles of the topology no process fills


def recognise(workers: Sequence[FoundWorker], topologies: Sequence[Topology]) -> Recognition:
    """The best-fitting topology and each worker's role in it (see the module's rule)."""
    best = Recognition(None)
    for topology in topologies:
        candidate = _fit(workers, topology)
        if (candidate.score, candidate.exact) > (best.score, best.exact):
            best = candidate
    return best


def _fit(workers: Sequence[FoundWorker], topology: Topology) -> Recognition:
    slots = [spec for spec in topology.registering_workers for _ in range(spec.registrants)]
    roles: dict[str, WorkerSpec] = {}
    score = exact = 0
    for worker in sorted(workers, key=lambda w: w.card is None):  # cards first
        same = [s for s in slots if s.component == worker.component]
        if not same:
            score -= UNEXPLAINED_PENALTY
            continue
        if worker.card is None:
            chosen = same[0]
        else:
            misses = {id(s): _misses(worker, s) for s in same}
            chosen = min(same, key=lambda s: misses[id(s)])
            exact += misses[id(chosen)] == 0
            score += 1 if misses[id(chosen)] == 0 else -1
        slots.remove(chosen)
        roles[worker.instance.key] = chosen
    score -= UNEXPLAINED_PENALTY * len(slots)
    empty = tuple(
        dict.fromkeys(s.role for s in slots if s.role not in {r.role for r in roles.values()})
    )
    return Recognition(topology, score, exact, roles, empty)


def _misses(worker: FoundWorker, spec: WorkerSpec) -> int:
    assert worker.card is not None and spec.card is not None
    view = FoundWorker(worker.instance, worker.card, worker.first_seen, spec.role, spec.card)
    return len(compare_card(view, worker.card, worker.card.model_name))
