"""One deadline shared by a sequence of waits, so nested waits never add up past the budget."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Deadline:
    seconds: float
    started: float = field(default_factory=time.monotonic)

    @property
    def remaining(self) -> float:
        return max(0.0, self.started + self.seconds - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining <= 0.0

    def slice(self, at_most: float) -> float:
        """Seconds to block for now: never past the deadline, never longer than `at_most`."""
        return min(self.remaining, at_most)
