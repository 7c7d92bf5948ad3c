"""Fingerprints compare two runs field by field: ids, ports and names aside, nothing else."""

from __future__ import annotations

import json

from discovery_harness.deployment.fingerprint import (
    answer_fingerprint,
    differences,
    discovery_fingerprint,
)
from discovery_harness.serving.requests import Reply
from tests.fakes import NS, card_entry, instance_entry, state


def _run(instance_id: int, port: int, **card: object) -> dict:
    observed = state(
        instance_entry("backend", instance_id, port=port),
        card_entry("backend", instance_id, runtime_config={"bootstrap_port": port + 1}, **card),
    )
    return discovery_fingerprint(observed, NS, "model-x")


def test_ids_ports_and_names_aside_two_runs_are_equal():
    assert differences(_run(0xABC1, 25012), _run(0xDEF2, 31000)) == []


def test_a_different_card_field_is_named_with_its_path():
    found = differences(_run(0xABC1, 25012), _run(0xABC1, 25012, worker_type="decode"))
    assert found == [
        "/v1/mdc/<ns>/backend/generate/<id:backend>/card_json/worker_type: 'aggregated' != 'decode'"
    ]


def test_a_key_in_one_run_only_is_named():
    one = _run(0xABC1, 25012)
    two = {**one, "v1/mdc/<ns>/encode/generate/<id:encode>": {}}
    assert differences(one, two) == ["/v1/mdc/<ns>/encode/generate/<id:encode>: only in the second"]


def test_answers_compare_without_per_call_ids():
    def reply(content: str, call_id: str) -> Reply:
        body = f'{{"id": "{call_id}", "created": 1, "model": "m-1", "choices": ["{content}"]}}'
        return Reply("chat", "/v1/chat/completions", 200, None, body)

    assert answer_fingerprint(reply("hi", "a"), "m-1") == answer_fingerprint(
        reply("hi", "b"), "m-1"
    )
    assert differences(
        answer_fingerprint(reply("hi", "a"), "m-1"), answer_fingerprint(reply("ho", "a"), "m-1")
    ) == ["[2]/choices[0]: 'hi' != 'ho'"]


def test_a_stream_compares_as_a_whole_whatever_its_chunking():
    def stream(*pieces: str) -> Reply:
        events = [
            {
                "id": str(i),
                "object": "chat.completion.chunk",
                "model": "m-1",
                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
            }
            for i, piece in enumerate(pieces)
        ]
        events[-1]["choices"][0]["finish_reason"] = "length"
        body = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
        return Reply("chat_stream", "/v1/chat/completions", 200, None, body)

    assert answer_fingerprint(stream("Hel", "lo"), "m-1") == answer_fingerprint(
        stream("H", "e", "llo"), "m-1"
    )
    assert differences(
        answer_fingerprint(stream("Hello"), "m-1"), answer_fingerprint(stream("Help"), "m-1")
    ) == ["[2]/choices[0]/text: 'Hello' != 'Help'"]
