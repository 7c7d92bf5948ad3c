"""The deployment's judge on hand-made observations: nothing in it needs a process."""

from __future__ import annotations

import dataclasses

import pytest

from discovery_harness.judge import deployment as judged
from discovery_harness.judge.verdict import CONFORMANT, FAILED, KNOWN, set_aside_known
from discovery_harness.model.contract import CHAT_COMPLETIONS, EMPTY, ExpectedCard
from discovery_harness.model.topology import KnownViolation
from discovery_harness.model.violations import (
    BAD_CONTENT,
    BAD_RESPONSE,
    INTERFERENCE,
    LISTED_EARLY,
    WRONG_CARD,
    Violation,
)
from discovery_harness.serving.http_client import Exchange
from discovery_harness.serving.requests import Reply
from tests.fakes import NS, FakeWorker, card_entry, instance_entry, state

pytestmark = pytest.mark.unit

ENCODER = ExpectedCard(
    model_type=CHAT_COMPLETIONS,
    model_input="Tokens",
    worker_type="encode",
    needs=(("aggregated",),),
)
MM_WORKER = ExpectedCard(
    model_type=EMPTY,
    model_input="Tokens",
    worker_type="aggregated",
    needs=(("encode",),),
    public=False,
)


def test_listed_with_a_role_missing_and_refused_answers_is_one_listed_early_with_both():
    refused = Reply("chat", "/v1/chat/completions", 404, "status 404", "Model not found")
    (found,) = judged.listed_early(
        "m", ["mm-worker"], "GET /v1/models/m/ready -> 503", [ENCODER], [refused], "  log line"
    )
    assert found.kind == LISTED_EARLY
    assert "no serving instance with a model card yet for 'mm-worker'" in found.message
    assert (
        "1 request(s) for the listed model got 404" in found.message and "log line" in found.message
    )


def test_listed_when_the_present_cards_can_serve_is_no_violation():
    assert judged.listed_early("m", ["mm-encoder"], "", [MM_WORKER, ENCODER], [], "") == []


def test_card_violations_judge_each_worker_and_the_namespace():
    worker = FakeWorker(
        "worker",
        "backend",
        ExpectedCard(model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="aggregated"),
    )
    s = state(
        instance_entry("backend", 7, 25012),
        card_entry("backend", 7, worker_type="decode"),
        instance_entry("backend", 9, 25099),  # nobody's: another process in the namespace
    )
    kinds = [v.kind for v in judged.card_violations(s, NS, "model-x", [worker])]
    assert sorted(kinds) == [INTERFERENCE, WRONG_CARD]


def test_known_violations_are_set_aside_unless_strict():
    found = [Violation(LISTED_EARLY, None, "listed early")]
    declared = [KnownViolation(kind=LISTED_EARLY, dynamo_versions=("1.6.1",), reason="finding 1")]
    assert set_aside_known(found, declared, "1.6.1").outcome == KNOWN
    assert set_aside_known(found, declared, "1.6.1", strict=True).outcome == FAILED
    assert set_aside_known(found, declared, "0.8.1").outcome == FAILED
    assert set_aside_known([], declared, "1.6.1").outcome == CONFORMANT


def test_a_self_test_is_strict_only_for_the_roles_it_injects_a_fault_into():
    declared = [KnownViolation(kind=LISTED_EARLY, dynamo_versions=("1.6.1",), reason="finding")]
    encoder = [Violation(LISTED_EARLY, "mm-encoder", "the encoder's window")]
    assert set_aside_known(encoder, declared, "1.6.1", strict={"mm-worker"}).outcome == KNOWN
    assert set_aside_known(encoder, declared, "1.6.1", strict={"mm-encoder"}).outcome == FAILED
    assert set_aside_known(encoder, declared, "1.6.1", strict=True).outcome == FAILED


def test_answers_of_a_model_that_never_became_ready_are_not_judged():
    """Finding 25's shape: the model is known never to be listed, so the deployment is never
    ready and its 404s and empty listing are that finding's, not violations of their own."""
    listing = Reply("listing", "/v1/models", 200, "model 'm' listed 0 times", "{}", request_id="a")
    refused = Reply("image", "/v1/images/generations", 404, "status 404", "{}", request_id="b")
    exchanges = [
        Exchange(1.0, "GET", "/v1/models", 200, "{}", False, "a", 0.9),
        Exchange(1.1, "POST", "/v1/images/generations", 404, "{}", False, "b", 1.0),
    ]
    assert judged.answered_once_ready(exchanges, [listing, refused]) == []
    assert judged.after_ready(state(), NS, "m", [], [], exchanges, [listing, refused], "") == []
    # The same answers once ready are judged: the listing's content, the 404.
    ready = [dataclasses.replace(e, after_ready=True) for e in exchanges]
    kinds = sorted(
        v.kind for v in judged.after_ready(state(), NS, "m", [], [], ready, [listing, refused], "")
    )
    assert kinds == [BAD_CONTENT, BAD_RESPONSE]
