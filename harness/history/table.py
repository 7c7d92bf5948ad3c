"""The history as one table, release x topology x check, in Markdown and JSON.

Checks per cell: registration (every worker's card as its era's contract says), serving (the
answers clients got, also after a failed readiness), and the verdict. Each violation's text
follows the table, so a reader sees what Dynamo did, not only that it failed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict

from discovery_harness.history.record import ItemFindings
from discovery_harness.history.run import ReleaseRun
from discovery_harness.model.violations import (
    CARD_WITHOUT_INSTANCE,
    INTERNAL_ADVERTISED,
    NEVER_REGISTERED,
    REGISTERED_UNEXPECTEDLY,
    WRONG_CARD,
)
from discovery_harness.serving.shapes import DEFAULT

# Violations about what etcd holds (the rest are about serving, processes or the frontend).
REGISTRATION_KINDS = frozenset(
    {
        NEVER_REGISTERED,
        WRONG_CARD,
        INTERNAL_ADVERTISED,
        REGISTERED_UNEXPECTEDLY,
        CARD_WITHOUT_INSTANCE,
    }
)


def _roles(violations: list[dict], kinds: frozenset[str] | None, exclude: bool) -> str:
    picked = [v for v in violations if kinds is None or ((v["kind"] in kinds) != exclude)]
    if not picked:
        return "ok"
    by_kind: dict[str, list[str]] = {}
    for v in picked:
        by_kind.setdefault(v["kind"], []).append(v.get("role") or "-")
    return "; ".join(f"{kind} ({', '.join(sorted(set(roles)))})" for kind, roles in by_kind.items())


def _answers(item: ItemFindings) -> str:
    if not item.requests:
        return "-"
    return ", ".join(f"{_request(r)} {r['status'] or 'no answer'}" for r in item.requests)


def _request(recorded: dict) -> str:
    """`chat`, or `chat[stop]` for a shape beyond the default (older records have none), and
    why it was sent where not declared (`chat (lora-cycle)`, `image[unknown-size] (bad-input)`)."""
    shape = recorded.get("shape", DEFAULT)
    sent = recorded["kind"] if shape == DEFAULT else f"{recorded['kind']}[{shape}]"
    purpose = recorded.get("purpose")
    return f"{sent} ({purpose})" if purpose else sent


def cells(item: ItemFindings) -> tuple[str, str, str, str]:
    """(verdict, registration, serving, other violations) of one release x topology."""
    if item.outcome == "skipped":
        return "skipped", item.reason, "", ""
    verdict = {"passed": "conformant", "failed": "FAILED", "error": "ERROR"}[item.outcome]
    if item.outcome == "passed" and item.known:
        verdict = f"conformant ({len(item.known)} known violation(s))"
    if item.stability:
        verdict = f"{verdict} ({item.stability})"
    registration = _roles(item.violations, REGISTRATION_KINDS, exclude=False)
    others = _roles(item.violations, REGISTRATION_KINDS, exclude=True)
    return verdict, registration, _answers(item), others


def _short(item: ItemFindings | None) -> str:
    """One matrix cell: ok, skipped (-), or the kinds of what went wrong."""
    if item is None or item.outcome == "skipped":
        return "-"
    if item.outcome == "passed":
        return "ok" if not item.known else "ok (known)"
    kinds = sorted({v["kind"] for v in item.violations}) or [item.outcome]
    rate = f" ({item.stability})" if item.stability.startswith("intermittent") else ""
    return "FAIL: " + ", ".join(kinds) + rate


def matrix(runs: Sequence[ReleaseRun], topologies: Sequence[str]) -> str:
    """Topology x release, one word per cell (README-sized); '-': no such mode there."""
    names = [t for t in topologies if any(t in run.findings for run in runs)]
    lines = [
        "| topology | " + " | ".join(run.release for run in runs) + " |",
        "|---|" + "---|" * len(runs),
    ]
    for name in names:
        cells = " | ".join(_short(run.findings.get(name)) for run in runs)
        lines.append(f"| {name} | {cells} |")
    return "\n".join(lines) + "\n"


def _clip(text: str, keep: int = 350) -> str:
    """Head and tail of a long message: what was awaited, and the log's last words (an
    exception's own line is at the end of a traceback)."""
    return text if len(text) <= 2 * keep else f"{text[:keep]} … {text[-keep:]}"


def markdown(runs: Sequence[ReleaseRun], topologies: Sequence[str]) -> str:
    lines = [
        "| release | topology | verdict | registration | answers | other violations |",
        "|---|---|---|---|---|---|",
    ]
    details: list[str] = []
    for run in runs:
        if run.error:
            lines.append(f"| {run.release} | (all) | NOT RUN | {run.error} | | |")
            continue
        for topology in topologies or sorted(run.findings):
            item = run.findings.get(topology)
            if item is None:
                lines.append(f"| {run.release} | {topology} | NOT RUN | no result | | |")
                continue
            verdict, registration, answers, others = cells(item)
            lines.append(
                f"| {run.release} | {topology} | {verdict} | {registration} | {answers} | "
                f"{others} |"
            )
            for v in item.violations:
                text = _clip(" ".join(v["message"].split()))
                details.append(f"- {run.release} / {topology} [{v['kind']}]: {text}")
            details += [f"- {run.release} / {topology} (known): {_clip(k)}" for k in item.known]
    envs = "\n".join(f"- {run.release}: {run.env}, {run.seconds:.0f} s" for run in runs)
    out = ["## Conformance history", "", *lines, "", "Environments:", envs]
    if details:
        out += ["", "Violations:", *details]
    return "\n".join(out) + "\n"


def from_json(text: str) -> list[ReleaseRun]:
    """The runs of a table written before (`as_json`), so a history run can resume."""
    return [
        ReleaseRun(
            release=entry["release"],
            env=entry["environment"],
            findings={name: ItemFindings(**item) for name, item in entry["topologies"].items()},
            error=entry["error"],
            seconds=entry["seconds"],
        )
        for entry in json.loads(text)
    ]


def as_json(runs: Sequence[ReleaseRun]) -> str:
    return json.dumps(
        [
            {
                "release": run.release,
                "environment": run.env,
                "error": run.error,
                "seconds": run.seconds,
                "topologies": {name: asdict(item) for name, item in run.findings.items()},
            }
            for run in runs
        ],
        indent=2,
    )
