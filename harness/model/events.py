"""Named moments of a deployment's life, as wall times: what a known violation's window is
measured from (e.g. "relisted after restarting prefill")."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# The model first listed in GET /v1/models at readiness; a LoRA listed in the runtime cycle.
LISTED = "listed"
LORA_LISTED = "LoRA listed"


def relisted_after_restart(role: str) -> str:
    """The event recorded once the model is listed again after `role` restarted."""
    return f"relisted after restarting {role}"


@dataclass
class Events:
    _at: dict[str, list[float]] = field(default_factory=dict)

    def note(self, name: str, at: float | None = None) -> float:
        """Record that `name` happened (now, unless `at` says when); returns its time."""
        stamp = time.time() if at is None else at
        self._at.setdefault(name, []).append(stamp)
        return stamp

    def times(self, name: str) -> tuple[float, ...]:
        return tuple(self._at.get(name, ()))

    def last(self, name: str) -> float | None:
        found = self._at.get(name)
        return found[-1] if found else None
