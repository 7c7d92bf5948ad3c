"""Managed processes: waits fail fast on exit, teardown reaches the whole process group."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from discovery_harness.common.deadline import Deadline
from discovery_harness.processes.managed import ManagedProcess, ProcessExited, WaitTimeout

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


def test_wait_fails_at_once_when_the_process_exits(tmp_path):
    proc = _proc(tmp_path, "print('boom: bad flag'); raise SystemExit(3)", role="mm-worker").start()
    started = time.monotonic()
    with pytest.raises(ProcessExited) as failure:
        proc.wait_until(lambda: False, "its model card", Deadline(60))
    assert time.monotonic() - started < 10  # not the 60 s deadline
    message = str(failure.value)
    assert f"mm-worker (pid {proc.pid}) exited with code 3" in message
    assert "its model card" in message and "boom: bad flag" in message


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


def test_stop_kills_the_whole_group_even_when_sigterm_is_ignored(tmp_path):
    proc = _proc(tmp_path, STUBBORN_TREE).start()
    deadline = Deadline(20)
    child_pid = proc.wait_until(lambda: _child_pid(proc), "the child to start", deadline)
    assert psutil.pid_exists(child_pid)
    proc.stop(grace=1)
    assert not proc.alive()
    assert not _running(child_pid), "grandchild survived teardown"


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
