"""A known violation with a window is excused only inside it: the same violation outside the
declared window (or with no time to place it) fails like any other."""

from __future__ import annotations

import pytest

from discovery_harness.judge.verdict import set_aside_known
from discovery_harness.model.events import Events
from discovery_harness.model.topology import KnownViolation, KnownWindow
from discovery_harness.model.violations import STATUS_503, Violation

pytestmark = pytest.mark.unit

RELISTED = "relisted after restarting prefill"
KNOWN = KnownViolation(
    kind=STATUS_503,
    dynamo_versions=("1.6.1",),
    reason="the prefill route is activated after the listing",
    window=KnownWindow(after=RELISTED, seconds=2.0),
    cites=("ai-dynamo/dynamo#14606",),
)


def _503(*at: float) -> Violation:
    return Violation(STATUS_503, None, "503 after the topology was ready", at=at)


def _events(*times: float) -> Events:
    events = Events()
    for stamp in times:
        events.note(RELISTED, stamp)
    return events


def test_a_503_inside_the_window_is_known_with_its_window_and_citation():
    verdict = set_aside_known([_503(100.5, 101.9)], [KNOWN], "1.6.1", events=_events(100.0))
    assert verdict.violations == ()
    ((_, reason),) = verdict.known
    assert f"within 2 s after '{RELISTED}'" in reason and "ai-dynamo/dynamo#14606" in reason


@pytest.mark.parametrize(
    ("at", "events", "why"),
    [
        ((102.5,), (100.0,), "after the window"),
        ((99.0,), (100.0,), "before the event"),
        ((100.5, 105.0), (100.0,), "one occurrence outside"),
        ((100.5,), (), "no such event recorded"),
        ((), (100.0,), "no time to place it"),
    ],
)
def test_outside_the_window_it_fails(at, events, why):
    verdict = set_aside_known([_503(*at)], [KNOWN], "1.6.1", events=_events(*events))
    assert len(verdict.violations) == 1 and verdict.known == (), why


def test_another_release_or_a_strict_run_is_not_excused():
    inside = _events(100.0)
    assert set_aside_known([_503(100.5)], [KNOWN], "1.5.1", events=inside).violations
    assert set_aside_known([_503(100.5)], [KNOWN], "1.6.1", True, inside).violations


def test_each_restart_opens_its_own_window():
    events = _events(100.0, 200.0)
    assert not set_aside_known([_503(100.1, 201.0)], [KNOWN], "1.6.1", events=events).violations
