"""GET /v1/models, parsed once: the model ids a frontend lists."""

from __future__ import annotations

from typing import Any


def listed_ids(payload: Any) -> frozenset[str]:
    """The ids in an OpenAI-style model listing (`{"data": [{"id": ...}, ...]}`); anything
    else lists nothing."""
    data = payload.get("data", []) if isinstance(payload, dict) else []
    if not isinstance(data, list):
        return frozenset()
    return frozenset(
        entry["id"]
        for entry in data
        if isinstance(entry, dict) and isinstance(entry.get("id"), str)
    )
