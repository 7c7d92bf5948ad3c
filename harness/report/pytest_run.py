"""The pytest side of the reports: each deployment's entry travels in its test's properties
(xdist carries them to the controller), the controller writes the files at the end.

Only the harness's own items are reported (those marked `discovery_harness`), and only in a
run that asked for the harness: in another suite the report writes nothing, and touches no
earlier report. A run that asked starts by removing the previous run's files, so a usage
error or an empty selection leaves none that could be read as this run's; `--help`,
`--version` and `--collect-only` touch nothing (they are not runs).
"""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from pathlib import Path
from typing import Any, Protocol

import pytest

from discovery_harness.deployment.timeline import HEADER
from discovery_harness.report.files import default_report_dir, remove_reports, write_reports
from discovery_harness.report.model import FAILED, NO_TESTS, PASSED, RunEntry, deployment_from_dict
from discovery_harness.report.terminal import LABEL_CHARS, known_violation, timeline_label

PLUGIN_NAME = "discovery-harness-report"
ITEM_MARKER = "discovery_harness"  # plugin.scope's: what makes an item the harness's
DESELECTED = "deselected"
# The command a report names, where the run was started by a harness command rather than
# pytest itself (conformance: the user's command and the JUnit file it keeps, not its draft).
COMMAND_KEY = pytest.StashKey[str]()
DEPLOYMENT_REPORT, TIMELINE_ROW, KNOWN_VIOLATION = (
    "deployment_report",
    "timeline_row",
    "known_violation",
)


class OptionGroup(Protocol):
    """pytest's option group, or the plugin's wrapper of it that leaves out taken names."""

    def addoption(self, *names: str, **attrs: Any) -> None: ...


def add_option(group: OptionGroup) -> None:
    group.addoption(
        "--report-dir",
        default=None,
        help="where report.json, report.md and report.html go (default: HARNESS_REPORT_DIR, "
        "else reports/)",
    )


def report_dir(config: pytest.Config) -> Path:
    chosen = config.getoption("report_dir", None)
    return Path(chosen) if chosen else default_report_dir()


def is_a_run(config: pytest.Config) -> bool:
    option = config.option
    return not (
        getattr(option, "help", False)
        or getattr(option, "version", False)
        or getattr(option, "collectonly", False)
    )


def deployment_property(entry: object) -> tuple[str, str]:
    return DEPLOYMENT_REPORT, json.dumps(dataclasses.asdict(entry), default=str)  # type: ignore[call-overload]


class RunReport:
    """Collects, on the controller, every test's outcome, deployments, timelines and known
    violations; prints the summaries and writes the report files at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.describe: dict[str, str] = {}  # release, tier, infra, spawn
        self.started = time.time()
        self.active = False
        self.tests: dict[str, dict[str, object]] = {}
        self.deployments: list[dict[str, object]] = []
        self.timelines: list[tuple[str, str]] = []
        self.known: list[tuple[str, str]] = []
        self.checkout: dict[str, object] | None = None  # --dynamo-src (plugin.session sets it)

    def start(self, describe: dict[str, str]) -> None:
        """The harness is asked for: this run reports (the caller fills `describe` in)."""
        self.describe = describe
        if self.active:
            return
        self.active = True
        if is_a_run(self.config) and not hasattr(self.config, "workerinput"):
            remove_reports(report_dir(self.config))

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Named in the report too (a nightly topology the selection left out), not run."""
        for item in items:
            if item.get_closest_marker(ITEM_MARKER) is not None:
                self.tests.setdefault(item.nodeid, {"id": item.nodeid, "outcome": DESELECTED})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if ITEM_MARKER not in report.keywords:
            return
        if not self.active:  # an xdist controller learns it from its workers' reports
            self.start({})
        test = self.tests.setdefault(report.nodeid, {"id": report.nodeid, "outcome": PASSED})
        test["seconds"] = round(float(test.get("seconds", 0.0)) + report.duration, 3)  # type: ignore[arg-type]
        if report.failed:
            test["outcome"] = "failed" if report.when == "call" else "error"
        elif report.skipped and test["outcome"] == PASSED:
            test["outcome"] = "skipped"
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == TIMELINE_ROW:
                self.timelines.append((report.nodeid, str(value)))
            elif name == KNOWN_VIOLATION:
                self.known.append((report.nodeid, str(value)))
            elif name == DEPLOYMENT_REPORT:
                self.deployments.append(json.loads(str(value)))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.known:
            terminalreporter.section("known violations of this Dynamo release (not failed)")
            for nodeid, text in self.known:
                terminalreporter.write_line(f"{nodeid}: {known_violation(text)}")
        if self.timelines:
            terminalreporter.section("registration timeline (seconds after each process start)")
            terminalreporter.write_line(f"{'topology':<{LABEL_CHARS}} {HEADER}")
            for nodeid, value in self.timelines:
                topology, _, row = value.partition(" ")
                label = timeline_label(nodeid, topology)
                terminalreporter.write_line(f"{label:<{LABEL_CHARS}} {row}")
        written = getattr(self, "written", None)
        if written:
            terminalreporter.write_line(f"discovery harness: reports in {written}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput") or not is_a_run(self.config) or not self.active:
            return
        if exitstatus in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR):
            return
        if not any(t["outcome"] != DESELECTED for t in self.tests.values()):  # empty selection
            return
        failed = any(t["outcome"] in ("failed", "error") for t in self.tests.values())
        ran = any(t["outcome"] not in ("skipped", DESELECTED) for t in self.tests.values())
        run = RunEntry(
            command=self.config.stash.get(
                COMMAND_KEY, "pytest " + " ".join(self.config.invocation_params.args)
            ),
            started_at=self.started,
            finished_at=time.time(),
            host=socket.gethostname(),
            outcome=FAILED if failed else (PASSED if ran else NO_TESTS),
            tests=list(self.tests.values()),
            deployments=[deployment_from_dict(d) for d in self.deployments],
            release=self.describe["release"],
            tier=self.describe["tier"],
            infra=self.describe["infra"],
            spawn=self.describe["spawn"],
            checkout=self.checkout,
        )
        out = report_dir(self.config)
        write_reports(run, out)
        self.written = out
