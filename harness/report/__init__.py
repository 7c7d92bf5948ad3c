"""Reports people open: report.json (the schema in `model`), report.md (the matrix, also
appended to $GITHUB_STEP_SUMMARY) and report.html (one self-contained page with a timeline
per deployment), written at the end of a run by `files.write_reports`."""

from __future__ import annotations

from discovery_harness.report.files import (
    FILES,
    default_report_dir,
    load_report,
    remove_reports,
    write_reports,
)
from discovery_harness.report.model import RunEntry

__all__ = [
    "FILES",
    "RunEntry",
    "default_report_dir",
    "load_report",
    "remove_reports",
    "write_reports",
]
