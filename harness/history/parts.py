"""The history's contract parts per release: readiness, the canary, the LoRA cycle and bad
input, each judged in the topologies' one verdict, as one row per release. A cell says where
the part was not judged (and why that is by design: the release's era), where it held, where a
release's declared finding was seen, and where it failed (which topology, which violation)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from discovery_harness.deployment.whole_contract import BAD_INPUT_PART as BAD_INPUT
from discovery_harness.deployment.whole_contract import CANARY, LORA, READINESS
from discovery_harness.history.record import ItemFindings
from discovery_harness.history.run import ReleaseRun
from discovery_harness.model.violations import (
    BAD_INPUT_ANSWER,
    CANARY_NEVER_RAN,
    CANARY_REJECTED,
    FRONTEND_HEALTH_STALE,
    FRONTEND_READINESS_DISAGREES,
    LORA_LEFT_BEHIND,
    LORA_REFUSED,
    LORA_WITHOUT_RUNTIME_DATA,
    NEVER_READY,
    READY_BEFORE_CARD,
    READY_BUT_MUST_NOT,
    UNREADY_AFTER_READY,
)


@dataclass(frozen=True)
class Part:
    key: str
    title: str
    kinds: frozenset[str]
    not_judged: str  # what "-" means in its column


PARTS = (
    Part(
        READINESS,
        "readiness (/health, frontend /ready and /health)",
        frozenset(
            {
                NEVER_READY,
                READY_BEFORE_CARD,
                UNREADY_AFTER_READY,
                READY_BUT_MUST_NOT,
                FRONTEND_READINESS_DISAGREES,
                FRONTEND_HEALTH_STALE,
            }
        ),
        "the era runs no readiness settings",
    ),
    Part(
        CANARY,
        "canary",
        frozenset({CANARY_REJECTED, CANARY_NEVER_RAN}),
        "the era runs no canary",
    ),
    Part(
        LORA,
        "LoRA cycle",
        frozenset({LORA_REFUSED, LORA_LEFT_BEHIND, LORA_WITHOUT_RUNTIME_DATA}),
        "no runtime LoRA in the release",
    ),
    Part(BAD_INPUT, "bad input", frozenset({BAD_INPUT_ANSWER}), "no bad input sent"),
)
_KNOWN_KIND = re.compile(r"^\[([^\]]+)\]")


def _known_kinds(item: ItemFindings) -> set[str]:
    return {m.group(1) for k in item.known if (m := _KNOWN_KIND.match(k))}


def cell(part: Part, items: dict[str, ItemFindings]) -> str:
    """One release's cell for `part` over its topologies' items."""
    judged = {name: item for name, item in items.items() if item.judged.get(part.key)}
    if not judged:
        return "-"
    failed = [
        f"{name}: {', '.join(sorted(kinds))}"
        for name, item in judged.items()
        if (kinds := {v["kind"] for v in item.violations} & part.kinds)
    ]
    if failed:
        return "FAIL (" + "; ".join(failed) + ")"
    known = [
        f"{name}: {', '.join(sorted(kinds))}"
        for name, item in judged.items()
        if (kinds := _known_kinds(item) & part.kinds)
    ]
    held = f"ok ({len(judged)})"
    return f"{held}, known ({'; '.join(known)})" if known else held


def markdown(runs: Sequence[ReleaseRun]) -> str:
    """Release x part: `ok (n)` held in n topologies; `known (...)`: a declared finding seen;
    `FAIL (topology: kind)`; `-`: not judged there."""
    lines = [
        "| release | " + " | ".join(p.title for p in PARTS) + " |",
        "|---|" + "---|" * len(PARTS),
    ]
    for run in runs:
        if run.error:
            continue
        lines.append(
            f"| {run.release} | " + " | ".join(cell(p, run.findings) for p in PARTS) + " |"
        )
    legend = "; ".join(f"{p.title}: `-` = {p.not_judged}" for p in PARTS)
    return "\n".join(lines) + f"\n\n{legend}.\n"
