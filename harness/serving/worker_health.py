"""Each worker's own readiness, as Kubernetes reads it: its system port's `/health` (the
readiness probe Dynamo's operator gives a worker pod) and `/live`, observed from spawn to stop.

The system server has no push channel, so one thread polls every watched worker's socket on
127.0.0.1 in a tight loop (a GET on loopback costs well under a millisecond of the worker's
time) and keeps only the changes: when it first answered, when it first said ready, and every
change after. A change is stamped with the wall time of the poll that saw it, so "ready before
its card" is only ever claimed when the ready answer was read before the card's first put
(never a false alarm; a window shorter than one poll can go unseen).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import httpx

from discovery_harness.common.deadline import Deadline
from discovery_harness.common.tls import shared_context
from discovery_harness.serving.media_server import LOOPBACK

POLL_S = 0.05  # between two reads of a worker whose /health changed lately
STEADY_POLL_S = 0.5  # once it said the same for STEADY_AFTER_S (each 503 is an ERROR line in
STEADY_AFTER_S = 2.0  # its log: a follower, notready for life, would log 20 a second)
LIVE_EVERY = 10  # once /live said live, it is read every this many reads
REQUEST_TIMEOUT_S = 0.5
UNREACHABLE = "unreachable"  # nothing answers on the system port (not up yet, or gone)
READY, NOT_READY = "ready", "notready"


@dataclass(frozen=True)
class HealthChange:
    """One answer of `/health` that differs from the one before it."""

    at: float  # wall time of the poll that saw it
    status: str  # "ready" | "notready" | UNREACHABLE | what else the body said
    code: int | None  # HTTP status (None: no answer)
    endpoints: tuple[tuple[str, str], ...] = ()  # each endpoint's own health, as reported

    def describe(self) -> str:
        ends = ", ".join(f"{name} {state}" for name, state in self.endpoints)
        code = f"HTTP {self.code}" if self.code is not None else "no answer"
        return f"{self.status} ({code}{'; endpoints: ' + ends if ends else ''})"


@dataclass(frozen=True)
class WorkerHealth:
    """What one worker's system port said, from its spawn to its stop."""

    role: str
    pid: int
    port: int
    started: float  # wall time the watch began (the worker's spawn)
    changes: tuple[HealthChange, ...] = ()
    live_at: float | None = None  # first 200 from /live
    stopping_at: float | None = None  # the harness began stopping it: later changes are its
    # The model-card keys etcd held, read just after its first ready answer: a card of its own
    # missing there proves it said ready before registering (whatever the watch's lag).
    cards_when_ready: tuple[str, ...] | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/health"

    @property
    def ready_at(self) -> float | None:
        """When it first said ready."""
        return next((c.at for c in self.changes if c.status == READY), None)

    def before_stop(self) -> tuple[HealthChange, ...]:
        """The changes the worker made on its own (not those of its shutdown)."""
        cut = self.stopping_at
        return tuple(c for c in self.changes if cut is None or c.at < cut)

    def last(self) -> HealthChange | None:
        kept = self.before_stop()
        return kept[-1] if kept else None

    def history(self, since: float | None = None, limit: int = 6) -> str:
        """Its changes as offsets from `since` (default: its spawn), for a message."""
        origin = self.started if since is None else since
        shown = self.before_stop()[-limit:]
        return "; ".join(f"+{c.at - origin:.2f} s {c.describe()}" for c in shown) or "none"


@dataclass
class _Watched:
    role: str
    pid: int
    port: int
    started: float
    changes: list[HealthChange] = field(default_factory=list)
    live_at: float | None = None
    stopping_at: float | None = None
    cards_when_ready: tuple[str, ...] | None = None
    rounds: int = 0
    due: float = 0.0  # monotonic time of its next read

    def frozen(self) -> WorkerHealth:
        return WorkerHealth(
            self.role,
            self.pid,
            self.port,
            self.started,
            tuple(self.changes),
            self.live_at,
            self.stopping_at,
            self.cards_when_ready,
        )


def _read(client: httpx.Client, url: str) -> tuple[int | None, dict[str, Any]]:
    try:
        response = client.get(url)
    except httpx.HTTPError:
        return None, {}
    try:
        body = response.json()
    except ValueError:
        body = {}
    return response.status_code, body if isinstance(body, dict) else {}


def _change(at: float, code: int | None, body: dict[str, Any]) -> HealthChange:
    if code is None:
        return HealthChange(at, UNREACHABLE, None)
    endpoints = body.get("endpoints")
    ends = (
        tuple(sorted((str(k), str(v)) for k, v in endpoints.items()))
        if isinstance(endpoints, dict)
        else ()
    )
    return HealthChange(at, str(body.get("status", f"http-{code}")), code, ends)


def _same(a: HealthChange, b: HealthChange) -> bool:
    return (a.status, a.code, a.endpoints) == (b.status, b.code, b.endpoints)


class HealthWatch:
    """Polls the `/health` and `/live` of every worker it is given until it is stopped.
    `read_cards`: the model-card keys in etcd now (read once per worker, at its first ready)."""

    def __init__(
        self, read_cards: Callable[[], Collection[str]] | None = None, poll_s: float = POLL_S
    ) -> None:
        self._poll_s = poll_s
        self._read_cards = read_cards
        self._watched: dict[int, _Watched] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, role: str, pid: int, port: int, started: float | None = None) -> None:
        """Start observing a worker (its system port) from now; the thread starts with the
        first worker."""
        with self._lock:
            self._watched[pid] = _Watched(role, pid, port, started or time.time())
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="health-watch", daemon=True)
            self._thread.start()

    def stopping(self, pid: int) -> None:
        """The harness begins stopping this worker: what it says from now on is its shutdown."""
        with self._lock:
            watched = self._watched.get(pid)
            if watched is not None and watched.stopping_at is None:
                watched.stopping_at = time.time()

    def stop(self) -> None:
        """Every worker is being stopped: mark them, end the thread."""
        for pid in list(self._watched):
            self.stopping(pid)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * REQUEST_TIMEOUT_S + self._poll_s)

    def health(self) -> dict[int, WorkerHealth]:
        """What each worker said so far, by pid."""
        with self._lock:
            return {pid: w.frozen() for pid, w in self._watched.items()}

    def wait_ready(self, pids: Collection[int], deadline: Deadline) -> bool:
        """Whether every one of `pids` said ready (at any time) before the deadline; woken by
        each change, not a sleep."""

        def all_ready() -> bool:
            return all(
                (w := self._watched.get(pid)) is not None
                and any(c.status == READY for c in w.changes)
                for pid in pids
            )

        with self._changed:
            while not all_ready():
                if deadline.expired or self._stop.is_set():
                    return False
                self._changed.wait(timeout=min(deadline.remaining, 0.5))
        return True

    def of(self, pid: int) -> WorkerHealth | None:
        with self._lock:
            watched = self._watched.get(pid)
            return watched.frozen() if watched is not None else None

    def _run(self) -> None:
        with httpx.Client(
            timeout=REQUEST_TIMEOUT_S, trust_env=False, verify=shared_context()
        ) as client:
            while not self._stop.is_set():
                with self._lock:
                    current = [w for w in self._watched.values() if w.stopping_at is None]
                now = time.monotonic()
                for watched in current:
                    if watched.due <= now:
                        self._poll(client, watched)
                        watched.due = now + self._interval(watched)
                self._stop.wait(self._poll_s)

    def _interval(self, watched: _Watched) -> float:
        """Tight while its answer changes, relaxed once it has said the same for a while."""
        last = watched.changes[-1].at if watched.changes else watched.started
        return STEADY_POLL_S if time.time() - last > STEADY_AFTER_S else self._poll_s

    def _poll(self, client: httpx.Client, watched: _Watched) -> None:
        base = f"http://{LOOPBACK}:{watched.port}"
        code, body = _read(client, f"{base}/health")
        seen = _change(time.time(), code, body)
        first_ready = seen.status == READY and all(c.status != READY for c in watched.changes)
        if first_ready and self._read_cards is not None:
            cards: tuple[str, ...] | None = tuple(sorted(self._read_cards()))
        else:
            cards = None
        with self._changed:
            if not watched.changes or not _same(watched.changes[-1], seen):
                watched.changes.append(seen)
                if first_ready:
                    watched.cards_when_ready = cards
                self._changed.notify_all()
        watched.rounds += 1
        if code is not None and (watched.live_at is None or watched.rounds % LIVE_EVERY == 0):
            live, _ = _read(client, f"{base}/live")
            if live == 200 and watched.live_at is None:
                watched.live_at = time.time()
