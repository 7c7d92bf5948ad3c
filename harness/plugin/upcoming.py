"""The items this process will run after the current one, as far as it can know them.

Without xdist, the session's order. Under xdist, the controller sends each worker the items it
is to run a few at a time: what is queued so far is the worker's next item and its queue
(pytest-xdist's WorkerInteractor, `nextitem_index` and `torun`: not a public interface, so
anything unexpected there means no look-ahead, never an error)."""

from __future__ import annotations

import contextlib

import pytest


def upcoming_items(request: pytest.FixtureRequest) -> list[pytest.Item]:
    items = request.session.items
    if not hasattr(request.config, "workerinput"):
        if request.node not in items:
            return []
        return items[items.index(request.node) + 1 :]
    return [items[i] for i in _queued_indices(request.config) if 0 <= i < len(items)]


def _queued_indices(config: pytest.Config) -> list[int]:
    interactor = next(
        (p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"),
        None,
    )
    if interactor is None:
        return []
    with contextlib.suppress(Exception):
        following = [interactor.nextitem_index]
        with interactor.torun.lock() as queued:
            following += list(queued)
        return [i for i in following if isinstance(i, int)]
    return []
