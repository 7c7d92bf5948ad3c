"""What a user's whole pytest run ends with: a verdict on every deployment, also when a test body
raised before verify(), and no process the harness started left alive, after a normal end
and after Ctrl-C. One inner run serves the first two checks (each inner run starts etcd, NATS,
a frontend and a worker template: seconds of imports)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from discovery_harness.processes.managed import LEDGER_ENV
from tests.inner_pytest import ROOT, session_env

# One xdist worker for the module: its inner run is a module fixture (pyproject: --dist loadgroup).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300), pytest.mark.xdist_group("inner-runs")]

GIVES_UP = """
from discovery_harness_scenarios.catalogue import AGGREGATED

def test_gives_up_before_its_verdict(deploy):
    deployment = deploy(AGGREGATED)
    deployment.kill("worker")  # SIGKILL: its keys outlive it until the lease expires
    deployment.send("chat")  # 503: recorded after readiness
    raise RuntimeError("the test body gave up before verify()")
"""


# A command a non-interactive shell runs in the background inherits SIGINT ignored (so does a
# CI script started with `&`), and Python then keeps it ignored: the inner run installs the
# Ctrl-C handler itself. Not with preexec_fn: Python code between fork and exec, in a process
# with gRPC's threads, can abort the child (seen: SIGABRT before the inner run started).
WITH_CTRL_C = (
    "import signal, sys, pytest; "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.exit(pytest.console_main())"
)


def _inner_pytest(ledger: Path, infra: str, *target: str) -> subprocess.Popen[str]:
    """pytest on `target` with the outer run's infra, every started pid written to `ledger`."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WITH_CTRL_C,
            "-q",
            "-p",
            "no:cacheprovider",
            "--infra",
            infra,
            *target,
        ],
        cwd=ROOT,
        env=session_env(**{LEDGER_ENV: str(ledger)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _survivors(ledger: Path) -> list[str]:
    pids = [int(line) for line in ledger.read_text().split()]
    assert pids, "the inner run started no process"
    alive = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            group = os.getpgid(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
        if (proc.pid in pids or group in pids) and proc.status() != psutil.STATUS_ZOMBIE:
            alive.append(f"{proc.pid}: {' '.join(proc.info['cmdline'] or [])[:120]}")
    return alive


def _wait_for_worker(ledger: Path, inner: subprocess.Popen[str], deadline_s: float) -> None:
    """Block until the inner run has started a worker (etcd, NATS, frontend come first)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and inner.poll() is None:
        pids = ledger.read_text().split() if ledger.exists() else []
        if len(pids) >= 4:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            inner.wait(timeout=0.2)
    pytest.fail("the inner run never started a worker")


@dataclass(frozen=True)
class FinishedRun:
    returncode: int
    output: str
    ledger: Path


@pytest.fixture(scope="module")
def gave_up_run(tmp_path_factory: pytest.TempPathFactory, pytestconfig) -> FinishedRun:
    """A finished run whose test SIGKILLed its worker, met a 503 and raised before verify()."""
    workdir = tmp_path_factory.mktemp("gave-up")
    module = workdir / "test_gives_up.py"
    module.write_text(GIVES_UP)
    ledger = workdir / "pids"
    inner = _inner_pytest(
        ledger,
        pytestconfig.getoption("infra"),
        "-p",
        "discovery_harness.plugin",
        "--rootdir",
        str(ROOT),
        str(module),
    )
    output, _ = inner.communicate(timeout=280)
    return FinishedRun(inner.returncode, output, ledger)


@pytest.mark.nightly
def test_a_test_that_raises_still_gets_the_verdict(gave_up_run):
    out = gave_up_run.output
    assert gave_up_run.returncode == 1, out[-3000:]
    assert "the test body gave up before verify()" in out
    assert "ERROR at teardown of test_gives_up_before_its_verdict" in out, out[-3000:]
    assert "[503-after-ready]" in out and "POST /v1/chat/completions -> 503" in out
    # One screen: the harness's internals are hidden (the deploy fixture's own line stays,
    # at teardown), the verdict comes first.
    assert "harness/deployment/core.py:" not in out and "Session(endpoints=" not in out, out


@pytest.mark.nightly
def test_a_finished_run_leaves_nothing_behind(gave_up_run):
    assert gave_up_run.returncode == 1, gave_up_run.output[-3000:]  # a failed test, no crash
    assert _survivors(gave_up_run.ledger) == []


@pytest.mark.nightly
def test_ctrl_c_leaves_nothing_behind(tmp_path, pytestconfig):
    ledger = tmp_path / "pids"
    inner = _inner_pytest(
        ledger,
        pytestconfig.getoption("infra"),
        "scenarios/test_topologies.py::test_registers_and_serves[aggregated]",
    )
    _wait_for_worker(ledger, inner, deadline_s=120)
    inner.send_signal(signal.SIGINT)
    output, _ = inner.communicate(timeout=120)
    # pytest's own answer to Ctrl-C: exit 2 (interrupted) and its KeyboardInterrupt banner.
    assert inner.returncode == pytest.ExitCode.INTERRUPTED, output[-2000:]
    assert re.search(r"^!+ KeyboardInterrupt !+$", output, re.MULTILINE), output[-2000:]
    assert _survivors(ledger) == []
