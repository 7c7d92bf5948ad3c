"""The one way the harness runs a pytest session of its own as a child (history, bisect).

The child gets a session of its own, so Ctrl-C reaches the harness only: it is passed on once
as SIGINT, and the child is waited for while it stops its Dynamo processes (nothing is left
running); a child still running after the grace is terminated.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Mapping
from typing import IO

INTERRUPT_GRACE_S = 120.0  # a run's own teardown after Ctrl-C: it stops its processes

# How a caller may be handed a runner (tests give one that records the argv).
Runner = Callable[[list[str], IO[str]], int]


def run(argv: list[str], sink: IO[str], env: Mapping[str, str] | None = None) -> int:
    """Run `argv` with stdout and stderr into `sink`; its exit code."""
    proc = subprocess.Popen(
        argv,
        stdout=sink,
        stderr=subprocess.STDOUT,
        env=None if env is None else dict(env),
        start_new_session=True,
    )
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait()
        raise
