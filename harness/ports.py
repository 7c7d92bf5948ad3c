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
        candidates = list(range(LOW, HIGH + 1))
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
