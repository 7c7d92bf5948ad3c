"""What a user sees of the CLI and of pytest's help: conformance's own help, models list's
exit and status column, a closed pipe, the harness's group in `pytest --help`, and the run's
first lines naming the faults injected."""

from __future__ import annotations

import signal
import subprocess

import pytest

from discovery_harness.plugin.options import ENV_VARIABLES
from discovery_harness_workers.faults import FAULTS
from tests.inner_pytest import HARNESS, ROOT, run_cli, run_pytest, session_env

SCENARIO = "scenarios/test_topologies.py::test_registers_and_serves[aggregated]"


def _harness(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=env, timeout=60)


@pytest.mark.process
def test_conformance_help_says_what_it_runs_and_shows_no_report():
    result = _harness("conformance", "--help")
    assert result.returncode == 0, result.stderr
    assert "discovery_harness_scenarios.test_topologies::test_registers_and_serves" in result.stdout
    assert "reports/conformance.xml" in result.stdout and "--topology NAME" in result.stdout
    assert "=== conformance report ===" not in result.stdout  # no old report
    assert "general:" not in result.stdout and "--junitxml" not in result.stdout  # no pytest help


@pytest.mark.process
def test_models_list_exits_0_with_a_status_column_once(tmp_path):
    empty = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    listed = _harness("models", "list", "rerank", env=empty)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    rows = [line for line in listed.stdout.splitlines() if "(rerank/rerank)" in line]
    assert len(rows) == 1 and rows[0].startswith("MISSING "), listed.stdout
    # The one listing: -m's selection prints the same rows.
    selected = _harness("models", "list", "-m", "gpu_1 and not nightly", env=empty)
    assert rows[0] in selected.stdout.splitlines(), selected.stdout
    assert listed.stderr == ""  # printed once
    checked = _harness("models", "list", "--check", "rerank", env=empty)
    assert checked.returncode == 1, checked.stdout + checked.stderr


@pytest.mark.process
def test_a_closed_pipe_ends_a_printing_command_quietly():
    for command in (["plan"], ["topologies"]):
        proc = subprocess.Popen(
            [*HARNESS, *command],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=session_env(),
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()  # `| head -1`
        errors = proc.stderr.read().decode()
        assert proc.wait(timeout=60) in (0, -signal.SIGPIPE), errors
        assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors


@pytest.mark.process
def test_pytest_help_shows_the_harness_group_early_with_roles_faults_and_variables():
    result = run_pytest("--help", env={"COLUMNS": "2000"}, timeout=60)  # no wrapping
    lines = result.stdout.splitlines()
    group = next(i for i, line in enumerate(lines) if line.startswith("discovery harness"))
    assert lines.index("general:") < group < lines.index("Reporting:")  # right after general
    text = " ".join(" ".join(lines).split())
    assert "Roles: decode, diffusion-llm" in text and all(f in text for f in FAULTS)
    assert "else process (local etcd and nats-server binaries)" in text  # auto's order, spelt out
    tail = "\n".join(lines[-len(ENV_VARIABLES) - 3 :])
    assert all(name in tail for name in ENV_VARIABLES), tail


@pytest.mark.process
def test_the_runs_first_lines_name_the_injected_faults():
    faulty = run_pytest("--collect-only", "-q", "--inject-fault", "worker=handler-error", SCENARIO)
    assert "discovery harness: faults injected: worker=handler-error" in faulty.stdout
    clean = run_pytest("--collect-only", "-q", SCENARIO)
    assert "discovery harness: faults injected: none" in clean.stdout
