"""Reports: the three files of a run, never a stale one, and the HTML page in a real headless
Chromium (no console error, one SVG lane per worker, the failing worker's row marked)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from discovery_harness.report import FILES, load_report, write_reports
from discovery_harness.report.model import DeploymentEntry, Mark, RunEntry, WorkerEntry
from discovery_harness.report.pytest_run import report_dir
from tests.inner_pytest import run_cli, run_pytest

CHROMIUM = shutil.which("chromium")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
)
FAILING_RUN = (
    "scenarios/test_topologies.py::test_registers_and_serves[aggregated]",
    "scenarios/test_selftests.py::test_skipped_registration_is_caught_and_names_the_role"
    "[mm-encode-pd-mm-worker]",
)


def _run() -> RunEntry:
    now = time.time()
    worker = WorkerEntry(
        "worker",
        7,
        "init_decode",
        "backend",
        "v1/instances/ns/backend/generate/7",
        events=[Mark(now, "process-start"), Mark(now + 1, "serving", "v1/instances/ns/x")],
        failed=True,
        log_tail="HARNESS-FAULT skip-registration",
        log_path="/tmp/worker.log",
        violations=[{"kind": "never-registered", "message": "worker 'worker' never registered"}],
    )
    deployment = DeploymentEntry(
        "t[aggregated]",
        "aggregated",
        "ns",
        "m",
        "failed",
        workers=[worker],
        frontend=[Mark(now + 2, "answer", "POST /v1/chat/completions -> 404")],
        violations=[{"kind": "never-registered", "role": "worker", "message": "x"}],
    )
    return RunEntry(
        "pytest",
        now,
        now + 3,
        "1.6.1",
        "cpu",
        "process",
        "zygote",
        "host",
        "failed",
        [{"id": "t", "outcome": "failed"}],
        [deployment],
    )


def test_the_three_files_round_trip_and_the_summary_is_appended(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    paths = write_reports(_run(), tmp_path / "r")
    assert [p.name for p in paths] == list(FILES)
    data = json.loads(paths[0].read_text())
    assert data["schema"] == "discovery-harness-report" and data["version"] == 1
    assert load_report(paths[0]).deployments[0].workers[0].events[1].detail.startswith("v1/")
    assert "| aggregated | worker | FAILED |" in paths[1].read_text()
    assert summary.read_text() == paths[1].read_text() + "\n"
    page = paths[2].read_text()
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # no network


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (("--inject-fault", "nobody=skip-registration"), False),  # a usage error
        pytest.param(("-k", "no_test_has_this_name"), False, marks=pytest.mark.nightly),
        pytest.param(("--help",), True, marks=pytest.mark.nightly),  # not a run: untouched
    ],
    ids=["usage-error", "empty-selection", "help"],
)
@pytest.mark.process
def test_a_run_without_results_leaves_no_stale_report(tmp_path, args, kept):
    out = tmp_path / "reports"
    write_reports(_run(), out)
    done = run_pytest("tests/test_checks.py", "--report-dir", str(out), *args, timeout=120)
    assert done.returncode in (0, 4, 5), done.stdout + done.stderr
    assert all((out / name).exists() == kept for name in FILES), done.stdout


class _Dom(HTMLParser):
    """The rendered DOM's lanes per SVG and the matrix rows marked failed."""

    def __init__(self) -> None:
        super().__init__()
        self.lanes: list[list[tuple[str, str]]] = []
        self.failed_rows: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "svg" and "timeline" in classes:
            self.lanes.append([])
        elif tag == "g" and "lane" in classes:
            self.lanes[-1].append((found.get("data-role") or "", " ".join(classes)))
        elif tag == "tr" and "failed" in classes:
            self.failed_rows.append(found.get("data-role") or "")


def chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


@pytest.mark.process
@pytest.mark.nightly  # beside the browser test it proves (.ci/run installs chromium meanwhile)
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (bash ci/browser.sh installs it)")
def test_the_console_error_scan_sees_an_error(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('broken page')</script></body></html>")
    done = chromium(page, tmp_path / "profile", "--dump-dom")
    assert any("broken page" in line for line in console_errors(done.stderr)), done.stderr


@pytest.mark.process
@pytest.mark.nightly
@pytest.mark.timeout(600)
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (bash ci/browser.sh installs it)")
def test_the_html_report_of_a_real_run_renders_in_headless_chromium(tmp_path, pytestconfig):
    out = tmp_path / "reports"
    done = run_pytest(*FAILING_RUN, "-m", "selftest or e2e", "--report-dir", str(out), timeout=500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = load_report(out / "report.json")
    assert [d.verdict for d in run.deployments] == ["conformant", "failed"]
    page = out / "report.html"
    rendered = chromium(page, tmp_path / "profile", "--dump-dom")
    assert rendered.returncode == 0 and not console_errors(rendered.stderr), rendered.stderr
    dom = _Dom()
    dom.feed(rendered.stdout)
    assert len(dom.lanes) == len(run.deployments)  # one timeline per deployment
    for lanes, deployment in zip(dom.lanes, run.deployments, strict=True):
        workers = [role for role, classes in lanes if "worker" in classes.split()]
        assert workers == [w.role for w in deployment.workers]  # one lane per worker
        assert [r for r, c in lanes if "frontend" in c.split()] == ["frontend"]
    assert dom.failed_rows == ["mm-worker"]
    assert any(r == "mm-worker" and "failed" in c for r, c in dom.lanes[1])
    shot = chromium(
        page,
        tmp_path / "profile2",
        "--screenshot=" + str(out / "report.png"),
        "--window-size=1280,1400",
    )
    assert shot.returncode == 0 and (out / "report.png").stat().st_size > 10_000, shot.stderr
    kept = report_dir(pytestconfig) / "browser"  # beside this run's own reports (CI uploads)
    kept.mkdir(parents=True, exist_ok=True)
    for name in ("report.json", "report.html", "report.png"):
        shutil.copy(out / name, kept / name)


@pytest.mark.process
@pytest.mark.nightly
def test_conformance_after_a_usage_error_leaves_no_report(tmp_path):
    out = tmp_path / "reports"
    write_reports(_run(), out)
    (out / "conformance.xml").write_text("<testsuites/>")
    done = run_cli(
        "conformance", "--inject-fault", "nobody=x", env={"HARNESS_REPORT_DIR": str(out)}
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert not [p.name for p in out.iterdir()], done.stdout
