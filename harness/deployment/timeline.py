"""A worker's registration marks, defined once: process start, its generate instance's first
put, its card's first put, its /health first ready, the model first listed, and the first
answer.

The JUnit timeline, the HTML/Markdown report and the live progress lines all read these, so
they cannot disagree. The first answer is the first request the frontend answered 200 for
the model: a readiness probe or a test's request alike (a GET of the listing is no answer).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from discovery_harness.deployment.roster import Roster
from discovery_harness.discovery.observer import DiscoveryObserver
from discovery_harness.serving.http_client import Exchange
from discovery_harness.serving.worker_health import WorkerHealth


def first_answer(exchanges: Iterable[Exchange]) -> Exchange | None:
    """The first request answered 200 (every request kind is a POST; GETs read listings)."""
    return next((e for e in exchanges if e.status == 200 and e.method == "POST"), None)


@dataclass(frozen=True)
class WorkerTimeline:
    role: str
    pid: int
    started: float  # wall time of process start
    instance_at: float | None = None  # first put of its generate instance key
    card_at: float | None = None  # first put of its model card
    ready_at: float | None = None  # its /health first said ready (the readiness probe)
    listed_at: float | None = None  # the topology's public model first in /v1/models
    first_ok_at: float | None = None  # the first answer (see first_answer)
    instance_key: str | None = None
    card_key: str | None = None
    # Every change of its /health after the first ready answer (what it said, when).
    health_after_ready: tuple[str, ...] = ()

    def offsets(self) -> dict[str, float | None]:
        def since(stamp: float | None) -> float | None:
            return None if stamp is None else round(stamp - self.started, 3)

        return {
            "instance": since(self.instance_at),
            "card": since(self.card_at),
            "ready": since(self.ready_at),
            "listed": since(self.listed_at),
            "first_200": since(self.first_ok_at),
        }

    def row(self) -> str:
        cells = [f"{v:7.2f}s" if v is not None else "      -" for v in self.offsets().values()]
        return f"{self.role:<18} {self.pid:>7} " + " ".join(f"{c:>9}" for c in cells)


HEADER = f"{'role':<18} {'pid':>7} " + " ".join(
    f"{h:>9}" for h in ("instance", "card", "ready", "listed", "first_200")
)


def worker_timelines(
    observer: DiscoveryObserver,
    roster: Roster,
    listed_at: float | None,
    exchanges: Iterable[Exchange],
    health: dict[int, WorkerHealth] | None = None,
) -> list[WorkerTimeline]:
    """Each worker's marks, from the observer's first puts, the health watch and the client's
    exchanges."""
    state = observer.state()
    answered = first_answer(exchanges)
    rows = []
    for worker in roster.workers:
        records = roster.records(state, worker)
        instance = observer.first_put(records.generate.key) if records.generate else None
        card = observer.first_put(records.card.key) if records.card else None
        said = (health or {}).get(worker.pid)
        ready_at = said.ready_at if said is not None else None
        after = (
            tuple(
                f"{c.at - worker.proc.started_wall:.2f}s {c.describe()}"
                for c in said.before_stop()
                if c.at > ready_at
            )
            if said is not None and ready_at is not None
            else ()
        )
        rows.append(
            WorkerTimeline(
                role=worker.role,
                pid=worker.pid,
                started=worker.proc.started_wall,
                instance_at=instance.wall_time if instance else None,
                card_at=card.wall_time if card else None,
                ready_at=ready_at,
                listed_at=listed_at,
                first_ok_at=answered.wall_time if answered else None,
                instance_key=records.generate.key if instance and records.generate else None,
                card_key=records.card.key if card and records.card else None,
                health_after_ready=after,
            )
        )
    return rows
