"""The one way the harness runs a pytest session of its own as a child (history, bisect).

The child gets a session of its own, so Ctrl-C reaches the harness only: it is passed on once
as SIGINT, and the child is waited for while it stops its Dynamo processes (nothing is left
running); a child still running after the grace is terminated. Children run from worker
threads (`history -j N`) never see a KeyboardInterrupt: the main thread calls
`interrupt_all`, which passes Ctrl-C on to each running child and refuses new ones. A
command running children takes a termination request (SIGTERM, SIGHUP: a CI job cancelled, a
closed terminal) as Ctrl-C (`termination_as_ctrl_c`): its children, in sessions of their own,
would otherwise be left running. Each command took SIGINT back first (common/ctrl_c.py), so a
child starts with SIGINT at its default even when a script's `&` handed the command SIGINT
ignored (a child inherits an ignored signal, never a handler).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import IO

INTERRUPT_GRACE_S = 120.0  # a run's own teardown after Ctrl-C: it stops its processes

# How a caller may be handed a runner (tests give one that records the argv).
Runner = Callable[[list[str], IO[str]], int]

_running: set[subprocess.Popen[bytes]] = set()
_lock = threading.Lock()
_interrupted = threading.Event()


def run(argv: list[str], sink: IO[str], env: Mapping[str, str] | None = None) -> int:
    """Run `argv` with stdout and stderr into `sink`; its exit code. After `interrupt_all`,
    KeyboardInterrupt instead of a new child."""
    with _lock:
        if _interrupted.is_set():
            raise KeyboardInterrupt
        proc = subprocess.Popen(
            argv,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
        _running.add(proc)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        _stop([proc])
        raise
    finally:
        with _lock:
            _running.discard(proc)


def interrupt_all() -> None:
    """Ctrl-C for the children of every thread: each running one gets SIGINT and is waited
    for (terminated after the grace); no new one starts in this process afterwards."""
    with _lock:
        _interrupted.set()
        running = list(_running)
    _stop(running)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait()


_TERMINATION = (signal.SIGTERM, signal.SIGHUP)


def _raise_ctrl_c(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def termination_as_ctrl_c() -> Iterator[None]:
    """Within: SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, so the
    command's Ctrl-C path stops its children (call it from the main thread)."""
    previous = {sig: signal.signal(sig, _raise_ctrl_c) for sig in _TERMINATION}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
