"""Ctrl-C stops a harness command whatever its parent left SIGINT at. A script that starts one in
the background (`nohup python -m discovery_harness up aggregated > log 2>&1 &`) hands it SIGINT
ignored, and Python keeps an inherited SIG_IGN: each command takes SIGINT back as its first act
(common/ctrl_c.py), so `up` stops on SIGINT and leaves nothing, and a child it starts begins
with SIGINT at its default."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from discovery_harness.cli.app import main
from discovery_harness.common.ctrl_c import needs_taking, take_ctrl_c
from discovery_harness.common.deadline import Deadline
from discovery_harness.processes.managed import LEDGER_ENV
from discovery_harness.up.command import StopRequest
from tests.inner_pytest import HARNESS, ROOT, session_env

UP_DEADLINE_S = 180.0


@contextlib.contextmanager
def _sigint_at(handler: Any) -> Iterator[None]:
    """SIGINT at `handler` within (as a script's `&` leaves it: SIG_IGN), this process's own
    handler back after."""
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_only_a_sigint_that_would_never_raise_is_taken():
    assert needs_taking(signal.SIG_IGN) and needs_taking(signal.SIG_DFL) and needs_taking(None)
    assert not needs_taking(signal.default_int_handler)
    assert not needs_taking(lambda *_: None)  # a handler someone installed stays theirs


def test_an_inherited_ignored_sigint_raises_keyboard_interrupt_again():
    with _sigint_at(signal.SIG_IGN):
        take_ctrl_c()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            threading.Event().wait(5)  # the handler runs at once: never waited out


def test_every_command_takes_ctrl_c_before_anything_else(capsys):
    with _sigint_at(signal.SIG_IGN):
        assert main(["up", "no-such-topology"]) == 4  # refused: nothing started
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert "unknown topology" in capsys.readouterr().err


def test_ups_stop_request_takes_no_lock_and_ends_the_wait():
    stop = StopRequest()
    with _sigint_at(stop):
        os.kill(os.getpid(), signal.SIGINT)
        stop.wait(poll_s=0.01)
    assert stop.signals == [signal.SIGINT]


# What a script's background job sees, and what a command's child sees once it took Ctrl-C.
SEES = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, flush=True)"
TAKES_IT = f"""
import subprocess, sys
{SEES}
from discovery_harness.common.ctrl_c import take_ctrl_c
take_ctrl_c()
subprocess.run([sys.executable, "-c", {SEES!r}])
"""


def _in_background(argv: list[str], log: Path, env: dict[str, str]) -> int:
    """`argv` started as a script starts it: `nohup ARGV > LOG 2>&1 &` (SIGINT ignored); its
    pid."""
    script = f"nohup {shlex.join(argv)} > {shlex.quote(str(log))} 2>&1 & echo $!"
    started = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30
    )
    return int(started.stdout.strip())


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _until(condition, what: str, deadline: Deadline, log: Path) -> None:
    while not condition():
        assert not deadline.expired, f"no {what} within {deadline.seconds:.0f} s:\n" + (
            log.read_text() if log.exists() else "(no log)"
        )
        threading.Event().wait(deadline.slice(0.1))


@pytest.mark.process
def test_a_background_jobs_sigint_is_ignored_until_taken_and_a_child_gets_the_default(tmp_path):
    log = tmp_path / "job.log"
    pid = _in_background([sys.executable, "-c", TAKES_IT], log, session_env())
    _until(lambda: not _alive(pid), "end of the job", Deadline(60), log)
    assert log.read_text().split() == ["True", "False"], log.read_text()


def _takes_sigint(pid: int) -> bool:
    """Whether the process has a handler for SIGINT (/proc's SigCgt, bit SIGINT - 1)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt"))
    return bool(int(caught, 16) >> (signal.SIGINT - 1) & 1)


@pytest.mark.process
def test_sigint_before_up_started_anything_ends_it_and_starts_nothing(tmp_path, pytestconfig):
    """The window that lost a SIGINT: `up` kept the inherited SIG_IGN through its imports,
    the tier's probe and the import probe (seconds; on a GPU machine more), then started
    everything and stayed up."""
    ledger = tmp_path / "pids"
    argv = [*HARNESS, "up", "aggregated", "--infra", pytestconfig.getoption("infra")]
    with _sigint_at(signal.SIG_IGN):  # inherited, as from a script's `&`
        up = subprocess.Popen(
            [*argv, "--workdir", str(tmp_path / "up")],
            cwd=ROOT,
            env=session_env(**{LEDGER_ENV: str(ledger)}),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    try:
        deadline = Deadline(60)
        while up.poll() is None and not _takes_sigint(up.pid):
            assert not deadline.expired, "harness up never took SIGINT"
            threading.Event().wait(deadline.slice(0.01))
        up.send_signal(signal.SIGINT)
        output, _ = up.communicate(timeout=60)
    finally:
        _leave_nothing(up.pid, set())
    assert up.returncode == 130, output
    assert " is up " not in output, output
    assert not ledger.exists(), ledger.read_text()  # nothing started


def _survivors(pids: set[int]) -> list[str]:
    """Live processes among `pids` or in their process groups (each started in a session of
    its own: its group id is its pid)."""
    alive = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(ProcessLookupError, psutil.Error):
            if (proc.pid in pids or os.getpgid(proc.pid) in pids) and _alive(proc.pid):
                alive.append(f"{proc.pid}: {' '.join(proc.info['cmdline'] or [])[:120]}")
    return alive


@pytest.mark.e2e
@pytest.mark.nightly
@pytest.mark.timeout(300)
def test_up_started_by_a_scripts_background_job_stops_on_sigint(tmp_path, pytestconfig):
    log, ledger, env_file = tmp_path / "up.log", tmp_path / "pids", tmp_path / "up.env"
    argv = [*HARNESS, "up", "aggregated", "--infra", pytestconfig.getoption("infra")]
    argv += ["--env-file", str(env_file), "--workdir", str(tmp_path / "up")]
    pid = _in_background(argv, log, session_env(**{LEDGER_ENV: str(ledger)}))
    started: set[int] = set()
    try:
        _until(
            lambda: "aggregated is up" in log.read_text() or not _alive(pid),
            "'is up' line",
            Deadline(UP_DEADLINE_S),
            log,
        )
        assert _alive(pid), "harness up exited early:\n" + log.read_text()
        assert env_file.exists()  # written before the announcement
        started = {int(p) for p in ledger.read_text().split()}
        started |= {p.pid for p in psutil.Process(pid).children(recursive=True)}
        assert len(started) >= 4, log.read_text()  # etcd, NATS, frontend, worker (template)
        os.kill(pid, signal.SIGINT)
        _until(lambda: not _alive(pid), "exit after SIGINT", Deadline(120), log)
        output = log.read_text()
        assert "harness up: stopping ..." in output, output
        assert "harness up: stopped; every process it started has exited" in output, output
        assert _survivors(started) == []
    finally:
        _leave_nothing(pid, started)


def _leave_nothing(pid: int, started: set[int]) -> None:
    """After a failure too: SIGTERM to `up` (it stops what it started), then whatever of
    what it started still lives is killed by pid."""
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(timeout=60)
    for left in started:
        with contextlib.suppress(psutil.Error):
            psutil.Process(left).kill()
