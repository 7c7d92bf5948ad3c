"""Managed processes: waits fail fast on exit, teardown reaches the whole process group."""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment.stops import BackgroundStops
from discovery_harness.processes.managed import (
    HURRIED_GRACE_S,
    ManagedProcess,
    ProcessExited,
    WaitTimeout,
)

# A parent that ignores SIGTERM and has a grandchild that ignores it too.
STUBBORN_TREE = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c",
        "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    print("child", child.pid, flush=True)
    time.sleep(600)
    """
)


def _proc(tmp_path: Path, code: str, role: str = "probe") -> ManagedProcess:
    return ManagedProcess(
        role=role,
        argv=[sys.executable, "-c", code],
        env=dict(os.environ),
        log_path=tmp_path / f"{role}.log",
    )


@pytest.mark.process
def test_wait_fails_at_once_when_the_process_exits(tmp_path):
    proc = _proc(tmp_path, "print('boom: bad flag'); raise SystemExit(3)", role="mm-worker").start()
    started = time.monotonic()
    with pytest.raises(ProcessExited) as failure:
        proc.wait_until(lambda: False, "its model card", Deadline(60))
    assert time.monotonic() - started < 10  # not the 60 s deadline
    message = str(failure.value)
    assert f"mm-worker (pid {proc.pid}) exited with code 3" in message
    assert "its model card" in message and "boom: bad flag" in message


@pytest.mark.process
def test_wait_times_out_with_the_log_tail(tmp_path):
    proc = _proc(
        tmp_path, "print('still loading', flush=True); import time; time.sleep(60)"
    ).start()
    try:
        with pytest.raises(WaitTimeout) as failure:
            proc.wait_until(lambda: False, "GET /live", Deadline(1.5))
        assert "GET /live" in str(failure.value)
        assert "still loading" in str(failure.value)
    finally:
        proc.stop(grace=1)


@pytest.mark.process
def test_stop_kills_the_whole_group_even_when_sigterm_is_ignored(tmp_path):
    proc = _proc(tmp_path, STUBBORN_TREE).start()
    deadline = Deadline(20)
    child_pid = proc.wait_until(lambda: _child_pid(proc), "the child to start", deadline)
    assert psutil.pid_exists(child_pid)
    proc.stop(grace=1)
    assert not proc.alive()
    assert not _running(child_pid), "grandchild survived teardown"


# Exits 0 on SIGTERM after a short cleanup, well inside a hurried stop's wait.
CLEAN_ON_SIGTERM = textwrap.dedent(
    """
    import signal, sys, time
    def done(*_):
        time.sleep(0.05)
        sys.exit(0)
    signal.signal(signal.SIGTERM, done)
    print("ready", flush=True)
    time.sleep(600)
    """
)


@pytest.mark.process
def test_a_stop_is_cut_short_once_hurried_and_leaves_nothing(tmp_path):
    """The session's end: a stop still waiting out a long grace gets SIGKILL a short, bounded
    wait after its SIGTERM, whole process group included."""
    proc = _proc(tmp_path, STUBBORN_TREE).start()
    child_pid = proc.wait_until(lambda: _child_pid(proc), "the child to start", Deadline(20))
    hurry = threading.Event()
    stopping = threading.Thread(target=proc.stop, args=(60.0, hurry))
    started = time.monotonic()
    stopping.start()
    hurry.set()
    stopping.join(timeout=20)
    assert not stopping.is_alive()
    assert time.monotonic() - started < 10  # not the 60 s grace
    assert not proc.alive() and proc.returncode == -9
    assert not _running(child_pid), "grandchild survived teardown"


@pytest.mark.process
def test_a_hurried_stop_still_sends_sigterm_first(tmp_path):
    proc = _proc(tmp_path, CLEAN_ON_SIGTERM).start()
    proc.wait_until(lambda: "ready" in proc.log_text(), "it to start", Deadline(20))
    hurry = threading.Event()
    hurry.set()
    assert proc.stop(60.0, hurry) == 0  # it exited on SIGTERM, inside the short wait
    assert HURRIED_GRACE_S < 5  # shorter than Dynamo's graceful-shutdown grace


@pytest.mark.process
def test_the_session_end_hurries_background_stops(tmp_path):
    """drain(): every stop still waiting gets cut short; drain(hurry=False) waits them out."""
    proc = _proc(tmp_path, STUBBORN_TREE).start()
    proc.wait_until(lambda: _child_pid(proc), "the child to start", Deadline(20))
    stops = BackgroundStops()
    stops.submit("stubborn", lambda: proc.stop(60.0, stops.ending))
    started = time.monotonic()
    stops.drain()
    assert time.monotonic() - started < 10 and not proc.alive()

    waited = _proc(tmp_path, STUBBORN_TREE, role="waited").start()
    waited.wait_until(lambda: _child_pid(waited), "the child to start", Deadline(20))
    patient = BackgroundStops()
    patient.submit("waited", lambda: waited.stop(1.0, patient.ending))
    patient.drain(hurry=False)
    assert not patient.ending.is_set() and not waited.alive()


def _child_pid(proc: ManagedProcess) -> int | None:
    for line in proc.log_text().splitlines():
        if line.startswith("child "):
            return int(line.split()[1])
    return None


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
