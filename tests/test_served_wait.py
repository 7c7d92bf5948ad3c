"""The served-wait at readiness: what a half-registered topology answers is the early
listing's consequence (finding 6's 500 on 1.0-1.2: decode listed, prefill still starting),
not the model's answer; once every card is in etcd, an error is the answer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment.readiness import Serving, probe_until_served
from discovery_harness.serving.requests import Reply

pytestmark = pytest.mark.unit

BOOTSTRAP_500 = Reply(
    "chat",
    "/v1/chat/completions",
    500,
    "status 500",
    '{"message":"RuntimeError: bootstrap_info is required for disaggregated decode"}',
)
SERVED = Reply("chat", "/v1/chat/completions", 200, None, '{"choices": []}')


@dataclass
class FakeProc:
    def alive(self) -> bool:
        return True

    def popen_wait(self, seconds: float) -> None:
        return None


@dataclass
class FakeWorker:
    proc: FakeProc


def _serving(answers: list[Reply], incomplete: list[bool]) -> Serving:
    replies: Iterator[Reply] = iter(answers)
    states: Iterator[bool] = iter(incomplete)
    return Serving(
        model_name="m",
        public_role="decode",
        kind="chat",
        workers=(FakeWorker(FakeProc()),),  # type: ignore[arg-type]
        probe=lambda: next(replies),
        keys_summary=lambda: "",
        log_tail=lambda: "",
        incomplete=lambda: next(states),
    )


def test_an_error_while_a_card_is_missing_is_refused_and_probing_goes_on():
    serving = _serving([BOOTSTRAP_500, BOOTSTRAP_500, SERVED], incomplete=[True, True])
    probes, refused = probe_until_served(serving, Deadline(5))
    assert probes[-1] is SERVED and refused == [BOOTSTRAP_500, BOOTSTRAP_500]


def test_an_error_once_every_card_is_in_etcd_is_the_answer():
    serving = _serving([BOOTSTRAP_500, SERVED], incomplete=[False])
    probes, refused = probe_until_served(serving, Deadline(5))
    assert probes == [BOOTSTRAP_500] and refused == []
