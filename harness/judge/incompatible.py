"""The frontend's own rejection of a model's workers, read from its log: cards with the
model's name but another checksum ("Rejected incompatible workers"); the rejected worker
gets no traffic. The frontend is shared by a session's deployments, so a line is this
model's only when its `model=` field names it (or names no model: an older frontend's)."""

from __future__ import annotations

import re

from discovery_harness.model.violations import INCOMPATIBLE_WORKERS, Violation

INCOMPATIBLE_MARKER = "Rejected incompatible workers"
_MODEL_FIELD = re.compile(r'\bmodel=(?:"(?P<quoted>[^"]*)"|(?P<bare>\S+))')


def incompatible_workers(frontend_log: str, model_name: str) -> list[Violation]:
    """The frontend's own rejections of this model's workers: a line whose `model=` field
    names another model is that model's (a shared frontend serves several); a line naming
    none (an older frontend's) counts for every model."""
    lines = [line for line in frontend_log.splitlines() if INCOMPATIBLE_MARKER in line]
    mine = [line for line in lines if _model_field(line) in (None, model_name)]
    if not mine:
        return []
    return [
        Violation(
            INCOMPATIBLE_WORKERS,
            None,
            f"the frontend rejected workers of '{model_name}' as incompatible (cards with the same "
            "name but a different checksum; the rejected worker gets no traffic):\n"
            + "\n".join(f"    | {line}" for line in mine[-5:]),
        )
    ]


def _model_field(line: str) -> str | None:
    match = _MODEL_FIELD.search(line)
    if match is None:
        return None
    return match["quoted"] if match["quoted"] is not None else match["bare"]
