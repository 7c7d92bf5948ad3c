"""The frontend's log since a deployment started: one window, read by the verdict (the
frontend's own words on a 503) and by readiness (its last lines beside a refusal)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from discovery_harness.processes.managed import without_colours
from discovery_harness.runtime.frontend import Frontend


@dataclass(frozen=True)
class FrontendLogWindow:
    """The log of whichever frontend the deployment talks to now, from `offset` on (a shared
    frontend: this deployment's share; its own: the whole log, across restarts)."""

    frontend: Callable[[], Frontend | None]
    offset: int = 0

    @classmethod
    def from_now(cls, frontend: Callable[[], Frontend | None]) -> FrontendLogWindow:
        current = frontend()
        return cls(frontend, current.log_offset() if current is not None else 0)

    def text(self) -> str:
        current = self.frontend()
        return current.log_since(self.offset) if current is not None else ""

    def tail(self, lines: int = 15) -> str:
        """The last lines, indented (its own reason for a refusal: a transient window is gone
        by the time anyone reads a CI log)."""
        last = without_colours(self.text()).strip().splitlines()[-lines:]
        return "\n".join(f"  {line}" for line in last) if last else "  (nothing)"
