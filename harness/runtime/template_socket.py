"""Reaching the run's worker template at its Unix socket, as a guest session does.

The template binds its socket as it starts, before its imports; an xdist worker may ask a
moment before that. So: retry while the template's process lives, up to a deadline; None once
it is gone (its log then says why)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import psutil

from discovery_harness.common.deadline import Deadline

RETRY_S = 0.1


def connect(address: Path, pid: int, deadline: Deadline) -> socket.socket | None:
    """A connection to the template at `address` (process `pid`), or None if it ended (or
    never listened before the deadline)."""
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(str(address))
            return conn
        except OSError:
            conn.close()
        if not _running(pid) or deadline.expired:
            return None
        time.sleep(deadline.slice(RETRY_S))


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
