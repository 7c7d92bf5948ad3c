"""What a newcomer sees first is the result, not noise: no warning blocks before a clean
conformance run's result, report.md rows with exactly their columns, the report naming the
report file the user keeps, and a failing test showing the harness's diagnosis rather than
a list of reprs."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from discovery_harness.model.contract import CHAT_COMPLETIONS
from discovery_harness.model.violations import NEVER_REGISTERED, Violation
from discovery_harness.report import markdown
from discovery_harness.report.model import DeploymentEntry, Mark, RunEntry, WorkerEntry
from tests.inner_pytest import ROOT, run_cli, run_pytest

UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def cells(row: str) -> list[str]:
    """A Markdown table row's cells, as GitHub splits them (an escaped \\| stays inside)."""
    return UNESCAPED_PIPE.split(row.strip())[1:-1]


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


@pytest.mark.process
def test_the_cli_leaves_the_plugin_for_pytest_to_import():
    """Imported before pytest.main, the plugin's modules cannot be assertion-rewritten and
    pytest warns about each (four warning blocks before conformance's result)."""
    probe = ("import sys, discovery_harness.cli.app; print(sorted(m for m in sys.modules if "
             "'plugin' in m))")
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "discovery_harness.plugin" not in result.stdout, result.stdout


def test_report_md_rows_have_their_five_cells_whatever_the_card_says():
    now = time.time()
    card = {
        "model_type": CHAT_COMPLETIONS,
        "model_input": "Tokens",
        "worker_type": "a|b",
        "needs": "x | y\nz",
    }
    worker = WorkerEntry(
        "worker | one",
        7,
        "init_decode",
        "backend",
        None,
        observed=card,
        events=[Mark(now, "process-start")],
    )
    deployment = DeploymentEntry("t", "aggregated", "ns", "m", "conformant", workers=[worker])
    empty = dataclasses.replace(deployment, workers=[])
    run = RunEntry(
        "pytest",
        now,
        now,
        "1.6.1",
        "cpu",
        "process",
        "zygote",
        "host",
        deployments=[deployment, empty],
    )
    rows = table_rows(markdown.render(run))
    assert len(rows) == 4, rows  # header, rule, the worker, the deployment without workers
    assert all(len(cells(row)) == 5 for row in rows), rows
    assert "Chat \\| Completions" in rows[2]


def test_a_list_of_violations_reads_as_the_violations():
    found = [Violation(NEVER_REGISTERED, "mm-encoder", "worker 'mm-encoder' never registered")]
    assert repr(found) == "[[never-registered] worker 'mm-encoder' never registered]"


@pytest.mark.process
@pytest.mark.nightly
@pytest.mark.timeout(300)
def test_a_clean_conformance_run_prints_no_warning_and_names_the_kept_report(tmp_path: Path):
    result = run_cli(
        "conformance",
        "--infra",
        "process",
        "--topology",
        "aggregated",
        "-p",
        "no:cacheprovider",
        env={"HARNESS_REPORT_DIR": str(tmp_path)},
        timeout=280,
    )
    shown = result.stdout + result.stderr
    assert result.returncode == 0, shown[-3000:]
    assert not [line for line in shown.splitlines() if "Warning" in line], shown[-3000:]
    report = (tmp_path / "report.md").read_text()
    assert all(len(cells(row)) == 5 for row in table_rows(report)), report
    assert f"JUnit report: {tmp_path / 'conformance.xml'}" in report, report
    assert ".conformance-" not in report, report
    assert f"generated xml file: {tmp_path / 'conformance.xml'}" in result.stdout, shown[-3000:]


@pytest.mark.process
@pytest.mark.nightly
@pytest.mark.timeout(300)
def test_a_failing_audit_test_shows_the_diagnosis_not_reprs():
    """test_audit's own assertions fail like every other test: the one-screen diagnosis."""
    result = run_pytest(
        "-x",
        "-m",
        "nightly",
        "scenarios/test_audit.py::test_every_topology_audits_conformant[aggregated]",
        "--inject-fault",
        "worker=skip-registration",
        timeout=280,
    )
    shown = result.stdout + result.stderr
    assert result.returncode == 1, shown[-3000:]
    assert "topology 'aggregated' broke its discovery contract" in shown, shown[-3000:]
    assert f"[{NEVER_REGISTERED}] worker 'worker'" in shown, shown[-3000:]
    assert "Violation(kind=" not in shown, shown[-3000:]
