"""`python -m discovery_harness conformance`: the conformance suite, with its own help and report.

It runs `scenarios/test_topologies.py::test_registers_and_serves` (one test per topology on
the CPU tier, one per GPU layout on the GPU tier) through pytest, writes the JUnit report and
prints one line per test. A run prints only the report it wrote: the report file is replaced
only by a run that ran tests, and a selection that holds no test is a usage error.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from discovery_harness.common import locations
from discovery_harness.history.run import CONFORMANCE_TEST, outcome
from discovery_harness.model import catalogue as catalogue_module
from discovery_harness.report import default_report_dir, remove_reports
from discovery_harness.report.pytest_run import COMMAND_KEY
from discovery_harness.report.terminal import known_violation

REPORT = "conformance.xml"  # in reports/ of the current directory, or HARNESS_REPORT_DIR
HELP = f"""\
Runs {locations.SCENARIOS_PACKAGE}.{locations.CONFORMANCE_MODULE}::{CONFORMANCE_TEST}:
every topology of the catalogue deployed on real etcd, NATS, frontend and dynamo.sglang
workers, its cards checked in etcd and its requests served (CPU tier: one test per
topology; GPU tier: one per layout).

The JUnit report (with per-worker timelines) goes to reports/{REPORT}, beside
report.json, report.md and report.html (the folder: HARNESS_REPORT_DIR, else reports/); a
summary, one line per test, is printed at the end. A run that ran no test leaves no report.

Any other argument goes to pytest: e.g. --infra process, --tier cpu, -x, -n 2. The harness's
own pytest options and environment variables: `pytest --help` (group "discovery harness").
"""


class _ReportCommand:
    """Names the user's command (and the JUnit file kept) in the report, not the draft."""

    def __init__(self, command: str) -> None:
        self.command = command

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[COMMAND_KEY] = self.command


class _OnlyTopologies:
    """A pytest plugin keeping only the tests of the named topologies (any tier's ids)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]):
        # Imported here, once pytest loaded the plugin itself: imported before pytest.main,
        # its modules could not be assertion-rewritten (pytest warned about each).
        from discovery_harness.plugin.session import topology_of

        keep = [i for i in items if getattr(topology_of(i), "name", None) in self.names]
        dropped = [item for item in items if item not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "conformance",
        help="run the conformance suite (other arguments go to pytest)",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="python -m discovery_harness conformance [--topology NAME ...] [pytest options ...]",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--topology",
        action="append",
        default=[],
        metavar="NAME",
        help="only this topology (repeatable); default: all",
    )
    parser.add_argument(
        "--dynamo-src",
        default=None,
        metavar="DIR",
        help="run a Dynamo checkout's components/src (its work tree as it is) over the "
        "release environment that fits it; env HARNESS_DYNAMO_SRC (docs/your-checkout.md)",
    )
    parser.set_defaults(run=run, takes_extra=True)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    names = set(args.topology)
    known = {t.name for t in catalogue_module.load().topologies}
    if names - known:
        raise ValueError(
            f"--topology {', '.join(sorted(names - known))}: no such topology; known: "
            + ", ".join(sorted(known))
        )
    reports = default_report_dir()
    report = reports / REPORT
    reports.mkdir(parents=True, exist_ok=True)
    remove_reports(reports)  # even pytest's own usage errors leave no older report
    report.unlink(missing_ok=True)
    if args.dynamo_src:
        extra = ["--dynamo-src", args.dynamo_src, *extra]
    command = " ".join(
        [
            "python -m discovery_harness conformance",
            *(f"--topology {n}" for n in args.topology),
            *extra,
        ]
    )
    plugins: list[object] = [_ReportCommand(f"{command} (JUnit report: {report})")]
    plugins += [_OnlyTopologies(names)] if names else []
    # Written under its own name (pytest announces that name); a run that ran no test
    # leaves none (the older one is gone already, above).
    code = pytest.main(
        [
            str(locations.conformance_tests()),
            f"--junitxml={report}",
            "-o",
            "junit_logging=no",
            *extra,
        ],
        plugins=plugins,
    )
    if code in NO_RUN:
        report.unlink(missing_ok=True)
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        raise ValueError(
            "the selection holds no conformance test (pytest collected or kept none); "
            "`python -m discovery_harness topologies` lists the topologies"
        )
    if code in NO_RUN:
        return int(code)
    if report.exists():
        print("\n=== conformance report ===")
        print(summarise(report))
        print(f"(JUnit XML with per-worker timelines: {report})")
    if (reports / "report.html").exists():
        print(f"(report.json, report.md, report.html: {reports})")
    return int(code)


# pytest's codes for a session that ran no test: its report is not kept
NO_RUN = (
    pytest.ExitCode.NO_TESTS_COLLECTED,
    pytest.ExitCode.USAGE_ERROR,
    pytest.ExitCode.INTERNAL_ERROR,
)


def summarise(junit: Path) -> str:
    """One line per test from the JUnit report, with known violations."""
    root = ElementTree.parse(junit).getroot()
    lines = []
    for case in root.iter("testcase"):
        found, _ = outcome(case)
        shown = {"failed": "FAILED", "error": "ERROR"}.get(found, found)
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        known = [known_violation(v) for k, v in properties.items() if k == "known_violation" and v]
        extra = f"  (known: {'; '.join(known)})" if known else ""
        lines.append(
            f"{shown:<8} {case.get('name', '?')} {float(case.get('time', 0)):6.1f}s{extra}"
        )
    return "\n".join(lines)
