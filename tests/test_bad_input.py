"""The bad-input rules as pure functions: which bad inputs a topology gets, how an answer to
one is judged (every rule, the one no worker can break included), and that a deliberate 4xx
is judged there and nowhere else."""

from __future__ import annotations

import dataclasses

import pytest

from discovery_harness.deployment.answer_cause import failed_after_ready
from discovery_harness.judge import bad_input as judge
from discovery_harness.judge.checks import bad_exchanges
from discovery_harness.model.violations import BAD_INPUT_ANSWER, BAD_RESPONSE
from discovery_harness.serving.bad_input import BAD_INPUTS, for_kinds, refusal_problem
from discovery_harness.serving.http_client import Exchange
from discovery_harness.serving.requests import AFTER_BAD_INPUT, BAD_INPUT, KINDS, Reply

pytestmark = pytest.mark.unit

ERROR_BODY = '{"message":"missing field `messages`","type":"Bad Request","code":400}'


def test_each_endpoint_gets_its_bad_inputs_once():
    labels = [b.label for b in for_kinds(("chat", "chat-stream", "completion"))]
    assert labels == [
        "chat[missing-messages]",
        "chat[messages-not-a-list]",
        "chat[image-to-text-only]",
        "completion[missing-prompt]",
        "completion[prompt-not-text]",
    ]


def test_an_image_is_not_bad_input_where_images_are_served():
    text_and_images = [b.label for b in for_kinds(("chat", "chat-image"))]
    assert "chat[image-to-text-only]" not in text_and_images
    assert not any(label.startswith("chat-image[") for label in text_and_images)
    assert [b.label for b in for_kinds(("chat-image", "chat-image-stream"))] == [
        "chat-image[missing-messages]",
        "chat-image[messages-not-a-list]",
    ]


def test_every_kind_but_the_listing_has_bad_inputs():
    assert set(BAD_INPUTS) | {"chat-stream", "chat-image-stream", "listing"} == set(KINDS)


def test_a_bad_input_changes_one_field_of_the_default_request():
    bad = next(b for b in BAD_INPUTS["image"] if b.name == "unknown-size")
    path, body = bad.payload("m")
    assert path == "/v1/images/generations" and body["size"] == "big" and body["prompt"]
    missing = next(b for b in BAD_INPUTS["chat"] if b.name == "missing-messages")
    assert "messages" not in missing.payload("m")[1]
    image = next(b for b in BAD_INPUTS["chat"] if b.name == "image-to-text-only")
    content = image.payload("m")[1]["messages"][0]["content"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (400, ERROR_BODY, None),
        (422, '{"error": {"message": "bad", "type": "invalid_request_error"}}', None),
        (200, '{"status":"failed","data":[]}', "accepted with 200"),
        (500, '{"message":"Internal server error"}', "answered 500, a server error"),
        (503, "", "answered 503, a server error for the client's mistake (empty body)"),
        (400, "", "answered 400 without an error body (empty body)"),
        (404, "<html>no</html>", "answered 404 without an error body"),
        (400, '{"message": ""}', "without an error body"),
        (302, "", "answered 302, not a 4xx"),
    ],
)
def test_an_answer_to_bad_input_is_a_4xx_with_an_error_body(status, body, says):
    problem = refusal_problem(status, body)
    assert (problem is None) if says is None else (says in (problem or "")), problem


def _reply(purpose: str, status: int, problem: str | None, kind: str = "image") -> Reply:
    return Reply(kind, "/v1/images/generations", status, problem, "{}", "unknown-size", purpose)


def test_the_verdict_names_the_worker_the_bad_input_and_what_came_back():
    replies = [
        _reply(BAD_INPUT, 400, None),
        _reply(BAD_INPUT, 500, "answered 500, a server error for the client's mistake (x)"),
        _reply(AFTER_BAD_INPUT, 500, "status 500"),
    ]
    found = judge.violations(replies, "image-diffusion", "")
    assert [v.kind for v in found] == [BAD_INPUT_ANSWER, BAD_INPUT_ANSWER]
    assert found[0].shape == "image[unknown-size]" and found[0].role == "image-diffusion"
    assert "bad input image[unknown-size] to worker 'image-diffusion': answered 500" in str(
        found[0]
    )
    assert "stopped serving after bad input" in found[1].message
    assert judge.violations([_reply(BAD_INPUT, 400, None)], "w", "") == []
    # Served, with content its release is known to get wrong: judged as any answer, not here.
    assert judge.violations([_reply(AFTER_BAD_INPUT, 200, "usage.prompt_tokens 0")], "w", "") == []


def _exchange(status: int, bad_input: bool, request_id: str = "id") -> Exchange:
    return Exchange(
        1.0, "POST", "/v1/chat/completions", status, ERROR_BODY, True, request_id, 0.5, bad_input
    )


def test_a_deliberate_4xx_is_not_an_error_for_a_listed_model():
    deliberate, accidental = _exchange(400, True), _exchange(400, False)
    assert bad_exchanges([deliberate]) == []
    assert [v.kind for v in bad_exchanges([deliberate, accidental])] == [BAD_RESPONSE]
    # Only a bad input's server error, or its acceptance, has a cause worth showing.
    server_error, accepted = _exchange(500, True), _exchange(200, True, "accepted")
    served = _exchange(200, False, "served")
    exchanges = [deliberate, server_error, accidental, accepted, served]
    replies = [dataclasses.replace(_reply(BAD_INPUT, 200, "accepted"), request_id="accepted")]
    assert failed_after_ready(exchanges, replies) == [server_error, accidental, accepted]
