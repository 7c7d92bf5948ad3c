"""The served-wait at readiness: what a half-registered topology answers is the early
listing's consequence (finding 6's 500 on 1.0-1.2: decode listed, prefill still starting),
not the model's answer; once every card is in etcd, an error is the answer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment.readiness import Serving, probe_until_served

pytestmark = pytest.mark.unit

BOOTSTRAP_500 = (
    500,
    '{"message":"RuntimeError: bootstrap_info is required for disaggregated decode"}',
)
SERVED = (200, '{"choices": []}')


@dataclass
class FakeProc:
    def alive(self) -> bool:
        return True

    def popen_wait(self, seconds: float) -> None:
        return None


@dataclass
class FakeWorker:
    proc: FakeProc


class CannedFrontend:
    """A client whose every POST gets the next canned (status, body), as a frontend's."""

    def __init__(self, answers: list[tuple[int, str]]) -> None:
        self.answers = iter(answers)

    def post_json(self, path: str, payload: dict[str, Any]) -> httpx.Response:
        status, body = next(self.answers)
        request = httpx.Request("POST", f"http://frontend{path}")
        return httpx.Response(status, text=body, request=request)


@dataclass
class CardsMissing:
    """Whether a card is missing at each read, in turn."""

    states: Iterator[bool]

    def missing_cards(self) -> list[str]:
        return ["prefill"] if next(self.states) else []

    def keys_summary(self) -> str:
        return ""


def _serving(answers: list[tuple[int, str]], incomplete: list[bool]) -> Serving:
    return Serving(
        model_name="m",
        public_role="decode",
        kind="chat",
        workers=(FakeWorker(FakeProc()),),  # type: ignore[arg-type]
        client=CannedFrontend(answers),  # type: ignore[arg-type]
        discovered=CardsMissing(iter(incomplete)),
        log_tail=lambda: "",
    )


def test_an_error_while_a_card_is_missing_is_refused_and_probing_goes_on():
    serving = _serving([BOOTSTRAP_500, BOOTSTRAP_500, SERVED], incomplete=[True, True])
    probes, refused = probe_until_served(serving, Deadline(5))
    assert [p.status for p in probes] == [500, 500, 200]
    assert [r.body for r in refused] == [BOOTSTRAP_500[1]] * 2


def test_an_error_once_every_card_is_in_etcd_is_the_answer():
    serving = _serving([BOOTSTRAP_500, SERVED], incomplete=[False])
    probes, refused = probe_until_served(serving, Deadline(5))
    assert [p.status for p in probes] == [500] and refused == []
