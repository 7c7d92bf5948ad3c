"""A live view of Dynamo's discovery state, fed by an etcd watch.

One range read fixes a revision, then a watch from the next revision delivers every change
in order, so the view never misses or reorders a write. Waiters block on a condition that
each watch event notifies: a wait returns within milliseconds of the key write, never on a
polling interval.
"""

from __future__ import annotations

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

    def start(self) -> DiscoveryObserver:
        response = self._client.get_prefix_response(WATCH_PREFIX)
        with self._changed:
            for kv in response.kvs:
                self._raw[kv.key.decode()] = kv.value
        self._watch_id = self._client.add_watch_prefix_callback(
            WATCH_PREFIX, self._on_watch, start_revision=response.header.revision + 1
        )
        return self

    def stop(self) -> None:
        if self._watch_id is not None:
            self._client.cancel_watch(self._watch_id)
            self._watch_id = None
        self._client.close()

    def _on_watch(self, response: object) -> None:
        now_wall, now_mono = time.time(), time.monotonic()
        with self._changed:
            if isinstance(response, Exception):
                self._watch_error = response
            else:
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
