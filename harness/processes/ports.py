"""Free-port allocation that is safe across pytest-xdist workers and parallel runs.

Ports come from one JSON registry under a file lock; each is confirmed free by binding it
on 127.0.0.1, and entries of dead owners are reclaimed. Ports stay <= 32767, below Linux's
ephemeral range, so a kernel-chosen client port never steals one between allocation and use.
"""

from __future__ import annotations

import json
import os
import random
import socket
import tempfile
from pathlib import Path

from filelock import FileLock

LOW, HIGH = 20000, 32767
MIN_FREE = 64  # a session needs a few dozen ports (infra, frontend, 4 per worker)
_REGISTRY_DIR = Path(os.environ.get("HARNESS_PORT_REGISTRY", tempfile.gettempdir()))
_REGISTRY = _REGISTRY_DIR / "dynamo-harness-ports.json"
_LOCK = FileLock(str(_REGISTRY) + ".lock")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _load() -> dict[str, int]:
    try:
        entries = json.loads(_REGISTRY.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return {port: pid for port, pid in entries.items() if _pid_alive(pid)}


def allocate(count: int = 1, owner_pid: int | None = None) -> list[int]:
    """Reserve `count` distinct free ports for `owner_pid` (default: this process)."""
    owner = owner_pid or os.getpid()
    if count <= 0:
        return []
    with _LOCK:
        taken = _load()
        chosen: list[int] = []
        candidates = list(range(LOW, HIGH + 1))  # module globals: see use_range()
        random.shuffle(candidates)
        for port in candidates:
            if str(port) in taken or not _bindable(port):
                continue
            chosen.append(port)
            taken[str(port)] = owner
            if len(chosen) == count:
                break
        if len(chosen) < count:
            raise RuntimeError(f"only {len(chosen)} free ports in {LOW}-{HIGH}, needed {count}")
        _REGISTRY.write_text(json.dumps(taken))
    return chosen


def allocate_one() -> int:
    return allocate(1)[0]


def release(ports: list[int]) -> None:
    with _LOCK:
        taken = _load()
        for port in ports:
            taken.pop(str(port), None)
        _REGISTRY.write_text(json.dumps(taken))


class PortRangeError(ValueError):
    """A --port-range that cannot serve a session."""


def use_range(text: str) -> tuple[int, int]:
    """Take ports from LOW-HIGH (the --port-range option); a malformed range, one outside
    1024-32767 (the ephemeral range above could hand a chosen port to a client socket), or
    one with fewer than MIN_FREE bindable ports is a PortRangeError naming why."""
    global LOW, HIGH
    low_text, sep, high_text = text.partition("-")
    if not sep or not low_text.isdigit() or not high_text.isdigit():
        raise PortRangeError(f"--port-range takes LOW-HIGH, not {text!r}")
    low, high = int(low_text), int(high_text)
    if not 1024 <= low < high <= 32767:
        raise PortRangeError(f"--port-range {text}: needs 1024 <= LOW < HIGH <= 32767")
    free = sum(1 for port in range(low, high + 1) if _bindable(port))
    if free < MIN_FREE:
        raise PortRangeError(
            f"--port-range {text}: only {free} of {high - low + 1} ports are free (the rest are "
            f"taken by other processes); a session needs at least {MIN_FREE}"
        )
    LOW, HIGH = low, high
    return low, high
