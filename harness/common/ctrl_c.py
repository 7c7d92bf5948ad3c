"""Ctrl-C for every command, whatever its parent left it.

A command a script starts in the background (`cmd &`, `nohup cmd > log 2>&1 &`: a shell
without job control runs it with SIGINT ignored) inherits SIGINT ignored, and Python keeps an
inherited SIG_IGN at start-up: no KeyboardInterrupt ever comes, SIGINT is dropped, and every
child the command starts inherits it ignored in turn (an ignored signal survives exec). Each
command's first act is `take_ctrl_c`: SIGINT raises KeyboardInterrupt again, and a child
started afterwards begins with SIGINT at its default (a handler does not survive exec), so a
Python child (a history's or bisect's pytest) takes Ctrl-C too.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

# What a fresh interpreter may find SIGINT at: ignored (inherited), the default (a C caller
# reset it), or unknown to Python. A Python handler someone installed is theirs: kept.
_NOT_TAKEN: tuple[Any, ...] = (signal.SIG_IGN, signal.SIG_DFL, None)


def needs_taking(current: Callable[..., Any] | int | None) -> bool:
    """Whether SIGINT, at `current`, would never raise KeyboardInterrupt."""
    return current in _NOT_TAKEN


def take_ctrl_c() -> None:
    """SIGINT raises KeyboardInterrupt in the main thread (from another thread: nothing)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if needs_taking(signal.getsignal(signal.SIGINT)):
        signal.signal(signal.SIGINT, signal.default_int_handler)
