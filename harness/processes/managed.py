"""Processes the harness starts: own process group, own log, fail-fast waits, sure teardown.

Every process runs in a new session (so its whole tree shares one process group), writes
stdout+stderr to its own log file, and is registered in a module-wide table so that test
teardown, test timeouts, Ctrl-C and interpreter exit all stop it. Processes are stopped only
through the process groups this module created -- never by name.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import psutil

from discovery_harness.common.deadline import Deadline

T = TypeVar("T")

_LIVE: dict[int, ManagedProcess] = {}
_LIVE_LOCK = threading.Lock()
LEDGER_ENV = "HARNESS_PID_LEDGER"
# A stop's wait after SIGTERM once the session is ending (BackgroundStops.drain). A Dynamo
# worker's SIGTERM withdraws its generate instance within ~60 ms; what its graceful shutdown
# does after that is sleep out DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS (5 s) before it
# exits, and a multinode follower (node_rank >= 1: handle_non_leader_node waits on an event
# nothing sets) never exits on SIGTERM at all. At the session's end etcd, NATS and the
# frontend are stopped next, so nothing is left for that grace to protect: waiting it out
# only delayed the end of every run (~15 s: the follower's whole stop grace, then SIGKILL).
HURRIED_GRACE_S = 0.5
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def without_colours(text: str) -> str:
    """Log text without terminal colour codes (Dynamo's Rust logs colour every field)."""
    return _ANSI.sub("", text)


class ProcessExited(RuntimeError):
    """The process died while something was waiting on it."""

    def __init__(self, proc: ManagedProcess, waiting_for: str) -> None:
        self.proc = proc
        self.waiting_for = waiting_for
        super().__init__(
            f"{proc.role} (pid {proc.pid}) exited with code {proc.returncode} while waiting "
            f"for {waiting_for}; last log lines:\n{proc.log_tail()}"
        )


class WaitTimeout(TimeoutError):
    """A readiness condition did not hold before the deadline."""

    def __init__(self, proc: ManagedProcess, waiting_for: str, seconds: float) -> None:
        self.proc = proc
        self.waiting_for = waiting_for
        super().__init__(
            f"{proc.role} (pid {proc.pid}) not ready after {seconds:.0f} s waiting for "
            f"{waiting_for}; last log lines:\n{proc.log_tail()}"
        )


class ProcessHandle(Protocol):
    """What the harness needs of a started process: Popen, or a child of the worker template
    (discovery_harness.runtime.spawn.ForkedChild)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


@dataclass
class ManagedProcess:
    role: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    cwd: Path | None = None
    # How to start it other than as a fresh subprocess (a fork of the worker template): in
    # its own session, stdin from /dev/null, output to log_path, with this argv and env.
    spawn: Callable[[], ProcessHandle] | None = field(default=None, repr=False)
    pass_fds: tuple[int, ...] = ()  # fresh subprocesses only
    popen: ProcessHandle | None = field(default=None, repr=False)
    started_wall: float = 0.0
    started_mono: float = 0.0
    # Wall time the harness first signalled it to stop (None: never): what it logs after
    # is its shutdown, not its contract.
    signalled_wall: float | None = None

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.spawn is not None:
            self.popen = self.spawn()
        else:
            with open(self.log_path, "ab") as log:
                self.popen = subprocess.Popen(
                    self.argv,
                    env=self.env,
                    cwd=self.cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    pass_fds=self.pass_fds,
                )
        self.started_wall, self.started_mono = time.time(), time.monotonic()
        with _LIVE_LOCK:
            _LIVE[self.popen.pid] = self
        _append_ledger(self.popen.pid)
        return self

    @property
    def pid(self) -> int:
        return self.popen.pid if self.popen else -1

    @property
    def returncode(self) -> int | None:
        return self.popen.poll() if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "    (no log yet)"
        tail = without_colours(text).splitlines()[-lines:]
        return "\n".join(f"    | {line}" for line in tail) or "    (log empty)"

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def mark_signalled(self) -> None:
        if self.signalled_wall is None:
            self.signalled_wall = time.time()

    def ensure_alive(self, waiting_for: str) -> None:
        if not self.alive():
            raise ProcessExited(self, waiting_for)

    def wait_until(
        self,
        probe: Callable[[], T | None],
        waiting_for: str,
        deadline: Deadline,
        block: Callable[[float], object] | None = None,
    ) -> T:
        """Return probe()'s first truthy value; fail at once if this process exits.

        `block(seconds)` waits for the next event (an etcd watch notification, say); without
        it the probe is re-run on a short interval (used for HTTP readiness only).
        """
        while True:
            self.ensure_alive(waiting_for)
            result = probe()
            if result:
                return result
            if deadline.expired:
                raise WaitTimeout(self, waiting_for, deadline.seconds)
            if block is not None:
                block(deadline.slice(0.25))
            else:
                self.popen_wait(deadline.slice(0.1))

    def popen_wait(self, seconds: float) -> None:
        """Sleep until the process exits or `seconds` pass, whichever is first."""
        if self.popen is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=seconds)

    def stop(self, grace: float = 15.0, hurry: threading.Event | None = None) -> int | None:
        """SIGTERM the process group, then SIGKILL it after `grace` seconds, or HURRIED_GRACE_S
        after the SIGTERM once `hurry` is set (the session is ending: see HURRIED_GRACE_S)."""
        if self.popen is None:
            return None
        pgid = self.popen.pid  # start_new_session: the leader's pid is the group id
        self.mark_signalled()
        _signal_group(pgid, signal.SIGTERM)
        if not self._exits(time.monotonic(), grace, hurry):
            _signal_group(pgid, signal.SIGKILL)
            self.popen.wait(timeout=10)
        # Children that outlived the leader still carry the group id.
        _signal_group(pgid, signal.SIGKILL)
        _wait_group_gone(pgid, timeout=10)
        with _LIVE_LOCK:
            _LIVE.pop(self.popen.pid, None)
        return self.popen.returncode

    def _exits(self, since: float, grace: float, hurry: threading.Event | None) -> bool:
        """Whether the process exits within `grace` seconds of `since` (its SIGTERM), or
        within HURRIED_GRACE_S of it once `hurry` is set."""
        assert self.popen is not None
        while True:
            hurried = hurry is not None and hurry.is_set()
            limit = min(grace, HURRIED_GRACE_S) if hurried else grace
            left = since + limit - time.monotonic()
            if left <= 0:
                return self.popen.poll() is not None
            # Not yet hurried: look at `hurry` again every tenth of a second.
            step = left if hurry is None or hurried else min(left, 0.1)
            try:
                self.popen.wait(timeout=step)
                return True
            except subprocess.TimeoutExpired:
                continue


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
    return members


def _wait_group_gone(pgid: int, timeout: float) -> None:
    """SIGKILL is delivered asynchronously: wait until no live member of the group remains."""
    members = _group_members(pgid)
    if members:
        psutil.wait_procs(members, timeout=timeout)


def _append_ledger(pid: int) -> None:
    ledger = os.environ.get(LEDGER_ENV)
    if ledger:
        with open(ledger, "a") as out:
            out.write(f"{pid}\n")


def stop_all(
    procs: Iterable[ManagedProcess], grace: float = 15.0, hurry: threading.Event | None = None
) -> None:
    """Stop several processes concurrently: dynamo's graceful shutdown takes seconds each."""
    threads = [
        threading.Thread(target=p.stop, args=(grace, hurry), name=f"stop-{p.role}")
        for p in procs
        if p.popen is not None
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def stop_everything(grace: float = 5.0) -> None:
    """Last-resort cleanup of every process this interpreter started and still tracks."""
    with _LIVE_LOCK:
        procs = list(_LIVE.values())
    stop_all(procs, grace)


def _on_fatal_signal(signum: int, _frame: object) -> None:
    stop_everything(grace=3.0)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_cleanup_handlers() -> None:
    """Stop tracked processes on interpreter exit and on SIGTERM/SIGHUP (Ctrl-C goes
    through pytest's KeyboardInterrupt, which runs fixture teardown)."""
    atexit.register(stop_everything)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _on_fatal_signal)
