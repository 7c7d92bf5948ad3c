"""One report of several runs (the history: one run per Dynamo release), each deployment
named with its run's release."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from discovery_harness.report.files import load_report, write_reports
from discovery_harness.report.model import FAILED, PASSED, RunEntry


def merge(runs: list[RunEntry], command: str) -> RunEntry:
    deployments = [
        dataclasses.replace(d, name=f"{run.release} {d.name}")
        for run in runs
        for d in run.deployments
    ]
    return RunEntry(
        command=command,
        started_at=min(r.started_at for r in runs),
        finished_at=max(r.finished_at for r in runs),
        release=",".join(r.release for r in runs),
        tier=runs[0].tier,
        infra=runs[0].infra,
        spawn=runs[0].spawn,
        host=runs[0].host,
        outcome=FAILED if any(r.outcome == FAILED for r in runs) else PASSED,
        tests=[{**t, "id": f"{r.release} {t['id']}"} for r in runs for t in r.tests],
        deployments=deployments,
        checkout=next((r.checkout for r in runs if r.checkout), None),  # history --dynamo-src
    )


def write_merged_reports(paths: list[Path], out_dir: Path) -> list[Path]:
    """The runs' report.json files that exist, merged into out_dir's three files."""
    runs = [load_report(p) for p in paths if p.exists()]
    if not runs:
        return []
    return write_reports(merge(runs, "python -m discovery_harness history"), out_dir)
