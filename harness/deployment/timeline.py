"""When each step of a worker's registration happened, taken from watch events and HTTP."""

from __future__ import annotations

from dataclasses import dataclass


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
