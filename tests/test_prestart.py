"""Deployments started ahead: taken once by the scenario and faults they were started for,
a start that fails is dropped (the test starts its own), and the untaken are stopped."""

from __future__ import annotations

import pytest

from discovery_harness.deployment.prestart import Prestarts, key_of
from discovery_harness.model.topology import Scenario
from discovery_harness_scenarios.catalogue import by_name

pytestmark = pytest.mark.unit


class FakeDeployment:
    def __init__(self, name: str, fails: bool = False) -> None:
        self.name, self.fails = name, fails
        self.started = self.stopped = self.stopped_in_background = 0

    def start(self) -> FakeDeployment:
        self.started += 1
        if self.fails:
            raise RuntimeError("no model")
        return self

    def stop(self) -> None:
        self.stopped += 1

    def stop_in_background(self) -> None:
        self.stopped_in_background += 1


def _key(name: str, faults: dict[str, str] | None = None):
    return key_of(Scenario.packed(by_name(name)), faults or {})


def test_a_deployment_started_ahead_is_taken_once_for_its_own_scenario_and_faults():
    prestarts = Prestarts()
    made = FakeDeployment("h-embedding")
    prestarts.ahead(_key("embedding"), lambda: made)
    prestarts.ahead(_key("embedding"), lambda: FakeDeployment("second"))  # one is waiting
    assert made.started == 1
    assert prestarts.take(_key("embedding", {"embedding": "skip-registration"})) is None
    assert prestarts.take(_key("rerank")) is None
    assert prestarts.take(_key("embedding")) is made
    assert prestarts.take(_key("embedding")) is None


def test_a_start_that_fails_ahead_is_stopped_and_dropped():
    prestarts = Prestarts()
    broken = FakeDeployment("h-rerank", fails=True)
    prestarts.ahead(_key("rerank"), lambda: broken)
    assert (broken.started, broken.stopped) == (1, 1)
    assert prestarts.take(_key("rerank")) is None


def test_those_no_test_took_are_stopped_at_the_sessions_end():
    prestarts = Prestarts()
    left = FakeDeployment("h-aggregated")
    prestarts.ahead(_key("aggregated"), lambda: left)
    prestarts.release()
    assert (left.stopped, left.stopped_in_background) == (0, 1)
    assert prestarts.take(_key("aggregated")) is None
