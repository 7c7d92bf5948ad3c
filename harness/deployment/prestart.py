"""Deployments started ahead of the tests that will use them.

Proving a worker's canary costs a second of idleness per deployment (DYN_CANARY_WAIT_TIME);
run one after the other, a matrix pays that second once per topology. A deployment started
while earlier tests run is idle from its start: its canary has come back by the time its own
test sends anything, so the matrix pays the idle second once per chain, not per topology.
Only deployments that need nothing but the scenario and the run's injected faults are
started ahead (the test item says so: the `prestart` marker); one never taken is stopped at
the session's end like any other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar

from discovery_harness.model.topology import Scenario

PrestartKey = tuple[str, str, tuple[tuple[str, str], ...]]
# Deployments started ahead of the running test (conformance of 13 topologies here, two runs
# each: depth 4 18.5-18.9 s, 8 15.6-16.9 s, 13 15.9-16.4 s).
DEPTH = 8


class Startable(Protocol):
    """What is started ahead: a deployment (this module need not know the class)."""

    def start(self) -> object: ...

    def stop(self) -> None: ...

    def stop_in_background(self) -> None: ...


D = TypeVar("D", bound=Startable)


def key_of(scenario: Scenario, faults: Mapping[str, str]) -> PrestartKey:
    return (scenario.topology.name, scenario.placement.name, tuple(sorted(faults.items())))


class Prestarts(Generic[D]):
    """The deployments started ahead, by the scenario and faults they were started for."""

    def __init__(self) -> None:
        self._waiting: dict[PrestartKey, D] = {}

    def ahead(self, key: PrestartKey, make: Callable[[], D]) -> None:
        """Start a deployment for `key` unless one is waiting already. A start that fails
        here is dropped: the test that needs it starts its own and meets the failure."""
        if key in self._waiting:
            return
        deployment = make()
        try:
            deployment.start()
        except Exception:
            deployment.stop()
            return
        self._waiting[key] = deployment

    def take(self, key: PrestartKey) -> D | None:
        return self._waiting.pop(key, None)

    def release(self) -> None:
        """Stop every deployment no test took (the session ends, or the selection changed):
        in the background, as a test's deployment is."""
        waiting, self._waiting = self._waiting, {}
        with contextlib.ExitStack() as each:  # every one stopped, whichever of them raised
            for deployment in waiting.values():
                each.callback(deployment.stop_in_background)
