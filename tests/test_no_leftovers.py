"""No process the harness starts outlives the run: after a normal end and after Ctrl-C."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.processes import LEDGER_ENV

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def _inner_pytest(ledger: Path, infra: str) -> subprocess.Popen[str]:
    env = {**os.environ, LEDGER_ENV: str(ledger)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--infra",
            infra,
            "scenarios/test_topologies.py::test_registers_and_serves[aggregated]",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # A command a non-interactive shell runs in the background inherits SIGINT ignored
        # (so does a CI script started with `&`): give the inner run a Ctrl-C that works.
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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


def test_a_finished_run_leaves_nothing_behind(tmp_path, pytestconfig):
    ledger = tmp_path / "pids"
    inner = _inner_pytest(ledger, pytestconfig.getoption("infra"))
    output, _ = inner.communicate(timeout=280)
    assert inner.returncode == 0, output[-3000:]
    assert _survivors(ledger) == []


def test_ctrl_c_leaves_nothing_behind(tmp_path, pytestconfig):
    ledger = tmp_path / "pids"
    inner = _inner_pytest(ledger, pytestconfig.getoption("infra"))
    _wait_for_worker(ledger, inner, deadline_s=120)
    inner.send_signal(signal.SIGINT)
    output, _ = inner.communicate(timeout=120)
    assert "KeyboardInterrupt" in output or inner.returncode != 0, output[-2000:]
    assert _survivors(ledger) == []
