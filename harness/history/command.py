"""`python -m harness history`: every release, then one table (Markdown and JSON)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from harness.history import table
from harness.history.run import DEFAULT_ENVS, ROOT, ReleaseRun, run_release
from harness.model.catalogue import Catalogue
from harness.report.merge import write_merged_reports


def history_command(args: argparse.Namespace, catalogue: Catalogue) -> int:
    releases = [r.strip() for r in args.releases.split(",") if r.strip()]
    topologies = [t.name for t in catalogue.select(args.topology or None)]
    envs_dir = Path(args.envs_dir) if args.envs_dir else DEFAULT_ENVS
    out_dir = Path(args.out) if args.out else ROOT / "reports" / "history"
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[ReleaseRun] = []
    for release in releases:
        started = time.monotonic()
        print(f"history: ai-dynamo {release} ...", flush=True)
        run = run_release(release, topologies, envs_dir, out_dir, [])
        outcome = run.error or f"{len(run.findings)} topologies"
        print(f"history: ai-dynamo {release}: {outcome} ({time.monotonic() - started:.0f} s)")
        runs.append(run)
    text = table.markdown(runs, topologies)
    (out_dir / "history.md").write_text(text)
    (out_dir / "history.json").write_text(table.as_json(runs))
    print(text)
    print(f"(written: {out_dir / 'history.md'}, {out_dir / 'history.json'})")
    write_merged_reports([out_dir / r / "report.json" for r in releases], out_dir)
    return 1 if any(run.error for run in runs) else 0
