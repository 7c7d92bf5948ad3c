"""A live view of Dynamo's discovery state, fed by a watch of its source (etcd, or the file
store: discovery_harness.discovery.sources).

A snapshot fixes where the watch resumes (for etcd, a revision), so the view never misses
or reorders a write. Waiters block on a condition that each change notifies: a wait returns
within milliseconds of the key write, never on a polling interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import etcd3

from discovery_harness.common.deadline import Deadline
from discovery_harness.discovery.sources import Change, DiscoverySource, EtcdSource
from discovery_harness.model.records import (
    CARDS_PREFIX,
    INSTANCES_PREFIX,
    Instance,
    ModelCard,
    parse_card,
    parse_instance,
)

T = TypeVar("T")
RESYNC_DEADLINE_S = 120.0  # how long a broken watch may take to come back (etcd restarts)


@dataclass(frozen=True)
class KeyEvent:
    wall_time: float
    mono_time: float
    kind: str  # "put" | "delete"
    key: str


@dataclass
class DiscoveryState:
    """Everything under v1/ at one moment, with typed instances and cards."""

    raw: dict[str, bytes] = field(default_factory=dict)

    def instances(self, namespace: str | None = None) -> list[Instance]:
        found = [
            parse_instance(k, v) for k, v in self.raw.items() if k.startswith(INSTANCES_PREFIX)
        ]
        return [i for i in found if i and (namespace is None or i.namespace == namespace)]

    def cards(self, namespace: str | None = None) -> list[ModelCard]:
        found = [parse_card(k, v) for k, v in self.raw.items() if k.startswith(CARDS_PREFIX)]
        return [c for c in found if c and (namespace is None or c.namespace == namespace)]

    def keys(self, namespace: str | None = None) -> list[str]:
        if namespace is None:
            return sorted(self.raw)
        return sorted(k for k in self.raw if f"/{namespace}/" in k)


class DiscoveryObserver:
    """The discovery state of a source (an etcd URL, or a DiscoverySource such as the file
    store), its events, and waits woken by every change."""

    def __init__(self, source: DiscoverySource | str) -> None:
        self.source: DiscoverySource = EtcdSource(source) if isinstance(source, str) else source
        self._raw: dict[str, bytes] = {}
        self._first_put: dict[str, KeyEvent] = {}
        self.events: list[KeyEvent] = []
        self._changed = threading.Condition()
        self._watch_error: Exception | None = None
        self._generation = 0
        self._stopping = threading.Event()
        self._resyncing = False  # a resync thread runs (under _resync_lock)
        self._broken_again: Exception | None = None  # a watch error seen during that resync
        self._resync_lock = threading.Lock()

    def start(self) -> DiscoveryObserver:
        self._sync()
        return self

    def _sync(self) -> None:
        """Everything now, then every change after. On a resync (the watch broke: etcd
        restarted or was unreachable), what changed meanwhile becomes events too, stamped when
        it was noticed."""
        current, cursor = self.source.snapshot()
        now_wall, now_mono = time.time(), time.monotonic()
        with self._changed:
            for key in sorted(set(self._raw) - set(current)):
                self.events.append(KeyEvent(now_wall, now_mono, "delete", key))
            for key, value in current.items():
                if self._raw.get(key) != value:
                    record = KeyEvent(now_wall, now_mono, "put", key)
                    self.events.append(record)
                    self._first_put.setdefault(key, record)
            self._raw = current
            self._watch_error = None
            self._generation += 1
            self._changed.notify_all()
        self.source.watch(cursor, self._on_changes, self._on_error)

    def stop(self) -> None:
        self._stopping.set()
        self.source.close()

    def _on_error(self, broken: Exception) -> None:
        if self._stopping.is_set():
            return
        with self._resync_lock:
            if self._resyncing:  # the resync under way runs once more: never dropped
                self._broken_again = broken
                return
            self._resyncing = True
        threading.Thread(target=self._resync, args=(broken,), daemon=True).start()

    def _resync(self, broken: Exception) -> None:
        """The watch broke: read and watch again until the source answers, for up to
        RESYNC_DEADLINE_S; only then do waits fail with the watch's error. A watch that
        breaks again while this runs (the new one, right after etcd came back) is resynced
        too, not dropped."""
        while True:
            self._resync_once(broken)
            with self._resync_lock:
                again, self._broken_again = self._broken_again, None
                if again is None or self._stopping.is_set():
                    self._resyncing = False
                    return
            broken = again

    def _resync_once(self, broken: Exception) -> None:
        deadline = Deadline(RESYNC_DEADLINE_S)
        while not self._stopping.is_set() and not deadline.expired:
            try:
                self.source.reopen()
                self._sync()
                return
            except Exception:  # still down: grpc raises its own errors
                self._stopping.wait(deadline.slice(0.2))
        with self._changed:
            self._watch_error = broken
            self._changed.notify_all()

    def _on_changes(self, changes: list[Change]) -> None:
        now_wall, now_mono = time.time(), time.monotonic()
        with self._changed:
            for kind, key, value in changes:
                if kind == "put" and self._raw.get(key) == value:
                    continue  # a file rewritten as it was: nothing happened
                if kind == "delete" and key not in self._raw:
                    continue
                record = KeyEvent(now_wall, now_mono, kind, key)
                self.events.append(record)
                if kind == "delete":
                    self._raw.pop(key, None)
                else:
                    assert value is not None
                    self._raw[key] = value
                    self._first_put.setdefault(key, record)
            self._generation += 1
            self._changed.notify_all()

    def state(self) -> DiscoveryState:
        with self._changed:
            return DiscoveryState(dict(self._raw))

    @property
    def client(self) -> etcd3.Etcd3Client:
        """The etcd client (self-tests and the benchmark write keys through it)."""
        if not isinstance(self.source, EtcdSource):
            raise TypeError(f"discovery at {self.source.where} is not etcd")
        return self.source.client

    def read_now(self, prefixes: list[str]) -> DiscoveryState:
        """A direct read, bypassing the watch: authoritative at the moment it returns."""
        return DiscoveryState(self.source.read(prefixes))

    def first_put(self, key: str) -> KeyEvent | None:
        with self._changed:
            return self._first_put.get(key)

    def wait_for(
        self,
        probe: Callable[[DiscoveryState], T | None],
        deadline: Deadline,
        guard: Callable[[], None] | None = None,
    ) -> T | None:
        """First truthy probe(state) before the deadline, else None.

        Re-probes on every watch event; `guard` runs before each probe (a process-liveness
        check raises there, so a dead worker fails the wait at once, not at the deadline).
        """
        while True:
            with self._changed:
                generation = self._generation
                state = DiscoveryState(dict(self._raw))
                if self._watch_error is not None:
                    raise RuntimeError(
                        f"discovery watch on {self.source.where} failed: {self._watch_error}"
                    )
            if guard is not None:
                guard()
            result = probe(state)
            if result or deadline.expired:
                return result or None
            self._wait_past(generation, deadline.slice(0.25))

    def _wait_past(self, generation: int, seconds: float) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._generation != generation, timeout=seconds)
