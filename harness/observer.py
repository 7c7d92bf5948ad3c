"""A live view of Dynamo's discovery state, fed by an etcd watch.

One range read fixes a revision, then a watch from the next revision delivers every change
in order, so the view never misses or reorders a write. Waiters block on a condition that
each watch event notifies: a wait returns within milliseconds of the key write, never on a
polling interval.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlparse

import etcd3

from harness.deadline import Deadline
from harness.records import (
    CARDS_PREFIX,
    INSTANCES_PREFIX,
    Instance,
    ModelCard,
    parse_card,
    parse_instance,
)

T = TypeVar("T")
WATCH_PREFIX = "v1/"
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


def etcd_client(etcd_url: str) -> etcd3.Etcd3Client:
    parsed = urlparse(etcd_url if "://" in etcd_url else f"http://{etcd_url}")
    return etcd3.client(host=parsed.hostname or "127.0.0.1", port=parsed.port or 2379)


class DiscoveryObserver:
    def __init__(self, etcd_url: str) -> None:
        self.etcd_url = etcd_url
        self._client = etcd_client(etcd_url)
        self._raw: dict[str, bytes] = {}
        self._first_put: dict[str, KeyEvent] = {}
        self.events: list[KeyEvent] = []
        self._changed = threading.Condition()
        self._watch_id: int | None = None
        self._watch_error: Exception | None = None
        self._generation = 0
        self._stopping = threading.Event()
        self._resyncing = threading.Event()

    def _resync_then_clear(self, broken: Exception) -> None:
        try:
            self._resync_until_back(broken)
        finally:
            self._resyncing.clear()

    def start(self) -> DiscoveryObserver:
        self._sync()
        return self

    def _sync(self) -> None:
        """Range-read everything at a revision, then watch from the next one. On a resync
        (the watch broke: etcd restarted or was unreachable), what changed meanwhile becomes
        events too, stamped when it was noticed."""
        response = self._client.get_prefix_response(WATCH_PREFIX)
        now_wall, now_mono = time.time(), time.monotonic()
        current = {kv.key.decode(): kv.value for kv in response.kvs}
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
        self._watch_id = self._client.add_watch_prefix_callback(
            WATCH_PREFIX, self._on_watch, start_revision=response.header.revision + 1
        )

    def stop(self) -> None:
        self._stopping.set()
        if self._watch_id is not None:
            with contextlib.suppress(Exception):
                self._client.cancel_watch(self._watch_id)
            self._watch_id = None
        self._client.close()

    def _resync_until_back(self, broken: Exception) -> None:
        """The watch broke: keep trying to read and watch again until etcd answers, for up to
        RESYNC_DEADLINE_S; only then do waits fail with the watch's error."""
        deadline = Deadline(RESYNC_DEADLINE_S)
        while not self._stopping.is_set() and not deadline.expired:
            try:
                # A fresh client: etcd3 marks an endpoint that failed as unusable for good.
                old, self._client = self._client, etcd_client(self.etcd_url)
                with contextlib.suppress(Exception):
                    old.close()
                self._sync()
                return
            except Exception:  # etcd still down: grpc raises its own errors
                self._stopping.wait(deadline.slice(0.2))
        with self._changed:
            self._watch_error = broken
            self._changed.notify_all()

    def _on_watch(self, response: object) -> None:
        now_wall, now_mono = time.time(), time.monotonic()
        if isinstance(response, Exception):
            if not self._stopping.is_set() and not self._resyncing.is_set():
                self._resyncing.set()
                threading.Thread(
                    target=self._resync_then_clear, args=(response,), daemon=True
                ).start()
            return
        with self._changed:
            for event in response.events:  # type: ignore[attr-defined]
                key = event.key.decode()
                is_delete = type(event).__name__ == "DeleteEvent"
                record = KeyEvent(now_wall, now_mono, "delete" if is_delete else "put", key)
                self.events.append(record)
                if is_delete:
                    self._raw.pop(key, None)
                else:
                    self._raw[key] = event.value
                    self._first_put.setdefault(key, record)
            self._generation += 1
            self._changed.notify_all()

    def state(self) -> DiscoveryState:
        with self._changed:
            return DiscoveryState(dict(self._raw))

    @property
    def client(self) -> etcd3.Etcd3Client:
        return self._client

    def read_now(self, prefixes: list[str]) -> DiscoveryState:
        """A direct range read, bypassing the watch: authoritative at the moment it returns."""
        raw: dict[str, bytes] = {}
        for prefix in prefixes:
            for value, meta in self._client.get_prefix(prefix):
                raw[meta.key.decode()] = value
        return DiscoveryState(raw)

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
                    raise RuntimeError(f"etcd watch on {self.etcd_url} failed: {self._watch_error}")
            if guard is not None:
                guard()
            result = probe(state)
            if result or deadline.expired:
                return result or None
            self._wait_past(generation, deadline.slice(0.25))

    def _wait_past(self, generation: int, seconds: float) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._generation != generation, timeout=seconds)
