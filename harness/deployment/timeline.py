"""When each step of a worker's registration happened, taken from watch events and HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.deployment.core import Deployment


@dataclass
class WorkerTimeline:
    role: str
    pid: int
    started: float  # wall time of process start
    instance_at: float | None = None  # first put of its generate instance key
    card_at: float | None = None  # first put of its model card
    listed_at: float | None = None  # the topology's public model first in /v1/models
    first_ok_at: float | None = None  # first 200 from the frontend for the model

    def offsets(self) -> dict[str, float | None]:
        def since(stamp: float | None) -> float | None:
            return None if stamp is None else round(stamp - self.started, 3)

        return {
            "instance": since(self.instance_at),
            "card": since(self.card_at),
            "listed": since(self.listed_at),
            "first_200": since(self.first_ok_at),
        }

    def row(self) -> str:
        cells = [f"{v:7.2f}s" if v is not None else "      -" for v in self.offsets().values()]
        return f"{self.role:<18} {self.pid:>7} " + " ".join(f"{c:>9}" for c in cells)


HEADER = f"{'role':<18} {'pid':>7} " + " ".join(
    f"{h:>9}" for h in ("instance", "card", "listed", "first_200")
)


def worker_timelines(deployment: Deployment) -> list[WorkerTimeline]:
    """Each worker's steps, from the observer's first puts and the client's exchanges."""
    observer = deployment.observer
    state = observer.state()
    first_ok = next(
        (e.wall_time for e in deployment.client.exchanges if e.status == 200 and e.after_ready),
        None,
    )
    rows = []
    for worker in deployment.workers:
        records = deployment.records(state, worker)
        instance = observer.first_put(records.generate.key) if records.generate else None
        card = observer.first_put(records.card.key) if records.card else None
        rows.append(
            WorkerTimeline(
                role=worker.role,
                pid=worker.pid,
                started=worker.proc.started_wall,
                instance_at=instance.wall_time if instance else None,
                card_at=card.wall_time if card else None,
                listed_at=deployment.listed_at,
                first_ok_at=first_ok,
            )
        )
    return rows
