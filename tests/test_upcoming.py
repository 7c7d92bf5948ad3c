"""What a process will run next (prestart's look-ahead): the session's order, or under xdist
the worker's queued items; anything unexpected in xdist's internals means none."""

from __future__ import annotations

import contextlib
from collections import deque
from types import SimpleNamespace

from discovery_harness.plugin.upcoming import upcoming_items


class WorkerInteractor:  # the name xdist's worker plugin has
    def __init__(self, next_index: object, queued: list[object]) -> None:
        self.nextitem_index = next_index
        self.torun = SimpleNamespace(lock=lambda: contextlib.nullcontext(deque(queued)))


def _request(items: list[str], node: str, worker: bool, plugins: list[object] = ()):
    manager = SimpleNamespace(get_plugins=lambda: set(plugins))
    config = SimpleNamespace(pluginmanager=manager, **({"workerinput": {}} if worker else {}))
    return SimpleNamespace(session=SimpleNamespace(items=items), node=node, config=config)


ITEMS = ["a", "b", "c", "d", "e"]


def test_one_process_looks_ahead_in_the_sessions_order():
    assert upcoming_items(_request(ITEMS, "b", worker=False)) == ["c", "d", "e"]
    assert upcoming_items(_request(ITEMS, "x", worker=False)) == []


def test_an_xdist_worker_looks_ahead_at_what_is_queued_for_it():
    queue = WorkerInteractor(3, [0, 4, "shutdown"])
    assert upcoming_items(_request(ITEMS, "b", worker=True, plugins=[queue])) == ["d", "a", "e"]


def test_xdist_internals_not_as_expected_give_no_look_ahead():
    assert upcoming_items(_request(ITEMS, "b", worker=True)) == []
    odd = type("WorkerInteractor", (), {})()  # a later xdist: no torun
    assert upcoming_items(_request(ITEMS, "b", worker=True, plugins=[odd])) == []
