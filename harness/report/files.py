"""Writing and reading the report files: report.json, report.md and report.html, into a
folder (and report.md onto GitHub's step summary)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from discovery_harness.report import html, markdown
from discovery_harness.report.model import RunEntry, as_dict, run_from_dict

FILES = ("report.json", "report.md", "report.html")
SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
REPORT_DIR_ENV = "HARNESS_REPORT_DIR"


def default_report_dir() -> Path:
    """reports/ in the current directory, or HARNESS_REPORT_DIR."""
    chosen = os.environ.get(REPORT_DIR_ENV)
    return Path(chosen) if chosen else Path.cwd() / "reports"


def write_reports(run: RunEntry, out_dir: Path) -> list[Path]:
    """The three files into `out_dir` (created); the Markdown also onto GitHub's summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text = markdown.render(run)
    paths = [out_dir / name for name in FILES]
    paths[0].write_text(json.dumps(as_dict(run), indent=2, default=str) + "\n")
    paths[1].write_text(text)
    paths[2].write_text(html.render(run))
    summary = os.environ.get(SUMMARY_ENV)
    if summary:
        with open(summary, "a") as sink:
            sink.write(text + "\n")
    return paths


def remove_reports(out_dir: Path) -> None:
    """A run that produces no report leaves none from an earlier run behind."""
    for name in FILES:
        (out_dir / name).unlink(missing_ok=True)


def load_report(path: Path) -> RunEntry:
    return run_from_dict(json.loads(path.read_text()))
