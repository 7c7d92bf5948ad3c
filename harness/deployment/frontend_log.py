"""The frontend's log since a deployment started: one window, read by the verdict (the
frontend's own words on a 503) and by readiness (its last lines beside a refusal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from discovery_harness.processes.managed import without_colours
from discovery_harness.runtime.frontend import Frontend


class FrontendHolder(Protocol):
    """What holds the frontend a deployment talks to now (its processes): read at each use,
    since its own frontend may be restarted."""

    @property
    def frontend(self) -> Frontend | None: ...


@dataclass(frozen=True)
class FrontendLogWindow:
    """The log of whichever frontend the deployment talks to now, from `offset` on (a shared
    frontend: this deployment's share; its own: the whole log, across restarts)."""

    holder: FrontendHolder
    offset: int = 0

    @classmethod
    def from_now(cls, holder: FrontendHolder) -> FrontendLogWindow:
        current = holder.frontend
        return cls(holder, current.log_offset() if current is not None else 0)

    def text(self) -> str:
        current = self.holder.frontend
        return current.log_since(self.offset) if current is not None else ""

    def tail(self, lines: int = 15) -> str:
        """The last lines, indented (its own reason for a refusal: a transient window is gone
        by the time anyone reads a CI log)."""
        last = without_colours(self.text()).strip().splitlines()[-lines:]
        return "\n".join(f"  {line}" for line in last) if last else "  (nothing)"
