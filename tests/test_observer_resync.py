"""A watch that breaks again while the observer resyncs (the new watch, right after etcd came
back) is resynced too: before, that error was dropped and the observer stopped watching."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from discovery_harness.common.deadline import Deadline
from discovery_harness.discovery.observer import DiscoveryObserver

pytestmark = pytest.mark.unit


class FlakySource:
    """Keys in memory; its watches break on command (the first one after a break too)."""

    where = "memory"

    def __init__(self) -> None:
        self.keys: dict[str, bytes] = {}
        self.on_changes: Callable | None = None
        self.on_error: Callable | None = None
        self.break_next_watch = False
        self.watches = 0

    def snapshot(self) -> tuple[dict[str, bytes], int | None]:
        return dict(self.keys), None

    def watch(self, after, on_changes, on_error) -> None:
        self.watches += 1
        self.on_changes, self.on_error = on_changes, on_error
        if self.break_next_watch:
            self.break_next_watch = False
            on_error(RuntimeError("the new watch broke at once"))

    def read(self, prefixes: list[str]) -> dict[str, bytes]:
        return dict(self.keys)

    def reopen(self) -> None:
        return None

    def close(self) -> None:
        return None


def test_a_watch_that_breaks_during_the_resync_is_resynced_again():
    source = FlakySource()
    observer = DiscoveryObserver(source).start()
    try:
        source.break_next_watch = True  # the resync's own watch breaks at once
        assert source.on_error is not None
        source.on_error(RuntimeError("etcd restarted"))
        settled = threading.Event()
        deadline = Deadline(5)
        while source.watches < 3 and not deadline.expired:  # the first, the broken, one more
            settled.wait(deadline.slice(0.01))  # a bounded poll of a fake, not a readiness wait
        assert source.watches == 3, f"{source.watches} watch(es): the second break was dropped"
        source.on_changes([("put", "after", b"2")])  # the live watch delivers
        assert "after" in observer.state().raw
    finally:
        observer.stop()
