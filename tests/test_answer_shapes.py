"""The promises the request shapes and the model's own files add, each shown failing on a
hand-made answer: the ones only Dynamo's frontend makes (the usage chunk of a stream, stop
sequences, base64 encoding, the completion stream's framing, the listing) here only; the ones
a worker can break also in scenarios/test_answer_selftests.py. Good answers, as 1.6.1's
frontend gives them, pass; the model facts are read from a tiny model directory."""

from __future__ import annotations

import base64
import copy
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from discovery_harness.model.topology import CHEAP_SHAPES, EVERY_SHAPE
from discovery_harness.serving import answers, model_facts, pooled_answers, shapes
from discovery_harness_workers.tiny_models import write_text_model

pytestmark = pytest.mark.unit

MODEL = "m"


def _sse(*events: Any) -> str:
    lines = [f"data: {json.dumps(e)}" for e in events]
    return "\n\n".join([*lines, "data: [DONE]"]) + "\n\n"


def _chat_chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion.chunk", "model": MODEL, "choices": [choice]}


def _text_chunk(text: str, finish: str | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "text": text}
    if finish:
        choice["finish_reason"] = finish
    return {"id": "t", "object": "text_completion", "model": MODEL, "choices": [choice]}


USAGE = {"prompt_tokens": 18, "completion_tokens": 8, "total_tokens": 26}
USAGE_CHUNK = {"id": "c", "object": "chat.completion.chunk", "model": MODEL, "choices": []}
CHAT_EVENTS = [
    _chat_chunk({"role": "assistant", "content": "Hello! "}, None),
    _chat_chunk({"content": "The quick brown"}, "length"),
    {**USAGE_CHUNK, "usage": USAGE},
]
TEXT_EVENTS = [
    {**_text_chunk("Hello! "), "usage": None},
    {**_text_chunk("The quick brown", "length"), "usage": None},
    {**_text_chunk(""), "choices": [], "usage": USAGE},
]
WITH_USAGE = answers.Asked(MODEL, max_tokens=8, prompt_tokens=18, include_usage=True)


def test_a_stream_with_include_usage_ends_in_one_usage_chunk():
    assert answers.chat_stream(_sse(*CHAT_EVENTS), WITH_USAGE) == []
    assert answers.completion_stream(_sse(*TEXT_EVENTS), WITH_USAGE) == []
    plain = answers.Asked(MODEL, max_tokens=8)
    assert answers.chat_stream(_sse(*CHAT_EVENTS[:2]), plain) == []
    assert answers.completion_stream(_sse(*TEXT_EVENTS[:2]), plain) == []


def _with(events: list[dict[str, Any]], index: int, **fields: Any) -> list[dict[str, Any]]:
    changed = copy.deepcopy(events)
    changed[index].update(fields)
    return changed


@pytest.mark.parametrize(
    ("events", "asked", "says"),
    [
        (CHAT_EVENTS[:2], WITH_USAGE, "usage on chunk(s) [] of 2, expected the last only"),
        (CHAT_EVENTS, answers.Asked(MODEL), "usage on chunk(s) [2], not asked for"),
        (_with(CHAT_EVENTS, 0, usage=USAGE), WITH_USAGE, "usage on chunk(s) [0, 2]"),
        (
            _with(CHAT_EVENTS, 2, choices=CHAT_EVENTS[1]["choices"]),
            WITH_USAGE,
            "the usage chunk carries choices",
        ),
        (
            _with(CHAT_EVENTS, 2, usage={**USAGE, "prompt_tokens": 17, "total_tokens": 25}),
            WITH_USAGE,
            "usage.prompt_tokens 17, expected 18",
        ),
        (
            _with(CHAT_EVENTS, 2, usage={**USAGE, "total_tokens": 27}),
            WITH_USAGE,
            "usage.total_tokens 27 != 18 + 8",
        ),
    ],
)
def test_each_broken_usage_chunk_promise_is_named(events, asked, says):
    problems = answers.chat_stream(_sse(*events), asked)
    assert any(says in p for p in problems), problems


@pytest.mark.parametrize(
    ("events", "says"),
    [
        (_with(TEXT_EVENTS, 0, object="chat.completion.chunk"), "expected text_completion"),
        (_with(TEXT_EVENTS, 1, id="other"), "chunk ids"),
        ([_text_chunk(""), _text_chunk("", "stop")], "no streamed content"),
        ([_text_chunk("Hi", "stop"), _text_chunk("!", "stop")], "finish_reason on chunk(s) [0, 1]"),
        ([_text_chunk("Hi"), _text_chunk("!")], "finish_reason on chunk(s) []"),
    ],
)
def test_each_broken_completion_stream_promise_is_named(events, says):
    problems = answers.completion_stream(_sse(*events), answers.Asked(MODEL))
    assert any(says in p for p in problems), problems


def test_a_text_holding_its_stop_sequence_is_caught():
    asked = answers.Asked(MODEL, max_tokens=32, stop=("fox", "."))
    chat = {
        "id": "c",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello! The quick brown "},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 18, "completion_tokens": 9, "total_tokens": 27},
    }
    assert answers.chat(chat, asked) == []
    chat["choices"][0]["message"]["content"] = "Hello! The quick brown fox"
    assert "contains the stop sequence(s) ['fox']" in " ".join(answers.chat(chat, asked))
    stream = [_text_chunk("quick brown"), _text_chunk(" fox.", "stop")]
    problems = answers.completion_stream(_sse(*stream), asked)
    assert any("['fox', '.']" in p for p in problems), problems


def test_an_image_prompt_is_counted_at_least_as_its_template():
    floor = answers.Asked(MODEL, prompt_tokens=25, prompt_tokens_floor=True)
    assert answers.prompt_tokens(28, floor) == []  # the image's tokens on top: fine
    assert "expected at least 25" in answers.prompt_tokens(24, floor)[0]
    exact = answers.Asked(MODEL, prompt_tokens=25)
    assert "expected 25" in answers.prompt_tokens(28, exact)[0]
    assert answers.prompt_tokens(28, answers.Asked(MODEL)) == []  # no local tokenizer


def _b64(*floats: float) -> str:
    return base64.b64encode(struct.pack(f"<{len(floats)}f", *floats)).decode()


EMBEDDING = {
    "object": "list",
    "model": MODEL,
    "data": [
        {"index": 0, "object": "embedding", "embedding": [0.1, 0.2, 0.3]},
        {"index": 1, "object": "embedding", "embedding": [0.3, 0.2, 0.1]},
    ],
    "usage": {"prompt_tokens": 10, "total_tokens": 10},
}
EMBEDDING_ASKED = answers.Asked(MODEL, inputs=("a", "b"), dimension=3, prompt_tokens=10)


def _embedding(*vectors: Any, prompt: int = 10) -> dict[str, Any]:
    answer = copy.deepcopy(EMBEDDING)
    for item, vector in zip(answer["data"], vectors, strict=True):
        item["embedding"] = vector
    answer["usage"] = {"prompt_tokens": prompt, "total_tokens": prompt}
    return answer


def test_an_embedding_is_judged_against_the_model_and_its_encoding():
    assert pooled_answers.embedding(EMBEDDING, EMBEDDING_ASKED) == []
    b64 = answers.Asked(MODEL, inputs=("a", "b"), dimension=3, encoding="base64")
    assert pooled_answers.embedding(_embedding(_b64(1, 2, 3), _b64(3, 2, 1)), b64) == []


@pytest.mark.parametrize(
    ("answer", "encoding", "says"),
    [
        (_embedding([0.1, 0.2], [0.2, 0.1]), "float", "embeddings of dimension 2, expected 3"),
        (_embedding([0.1, 0.2, 0.3], [0.3, 0.2, 0.1], prompt=11), "float", "prompt_tokens 11"),
        (_embedding([0.1, 0.2, 0.3], [0.3, 0.2, 0.1]), "base64", "of list, asked for base64"),
        (_embedding("%%%", _b64(1, 2, 3)), "base64", "not base64"),
        (_embedding(base64.b64encode(b"12345").decode(), _b64(1)), "base64", "5 bytes"),
        (_embedding(_b64(1, 2), _b64(2, 1)), "base64", "dimension 2, expected 3"),
        (_embedding(_b64(1, 2, 3), _b64(1, 2, 3)), "base64", "identical"),
    ],
)
def test_each_broken_embedding_promise_is_named(answer, encoding, says):
    asked = answers.Asked(
        MODEL, inputs=("a", "b"), dimension=3, prompt_tokens=10, encoding=encoding
    )
    problems = pooled_answers.embedding(answer, asked)
    assert any(says in p for p in problems), problems


def test_rerank_documents_come_only_when_asked_for():
    ranked = [{"score": 0.9, "index": 1, "document": "y"}, {"score": 0.3, "index": 0}]
    asked = answers.Asked(MODEL, documents=("x", "y", "z"), top_n=2)
    assert "result for index 0 carries no document" in pooled_answers.rerank(ranked, asked)
    without = answers.Asked(MODEL, documents=("x", "y", "z"), top_n=2, return_documents=False)
    problems = pooled_answers.rerank(ranked, without)
    assert problems == ["result for index 1 carries a document, not asked for"]


LISTING = {"object": "list", "data": [{"id": MODEL, "object": "model", "context_window": 4096}]}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"data": [{**LISTING["data"][0], "context_window": 2048}]}, "context_window 2048"),
        ({"data": [{**LISTING["data"][0], "context_window": None}]}, "context_window None"),
        ({"data": []}, "listed 0 times, expected once"),
        ({"data": LISTING["data"] * 2}, "listed 2 times, expected once"),
        ({"data": [{**LISTING["data"][0], "object": "list"}]}, "object 'list'"),
    ],
)
def test_each_broken_listing_promise_is_named(data, says):
    asked = answers.Asked(MODEL, context_length=4096, context_source="config.json")
    assert answers.listing(LISTING, asked) == []
    problems = answers.listing(data, asked)
    assert any(says in p for p in problems), problems


def test_model_facts_come_from_the_model_files(tmp_path: Path):
    model_dir = write_text_model(tmp_path / "text")
    facts = model_facts.read(model_dir)
    assert (facts.hidden_size, facts.context_length) == (64, 4096)
    assert facts.context_source == "config.json max_position_embeddings 4096"
    flagged = model_facts.read(model_dir, ("--page-size", "16", "--context-length", "2048"))
    assert (flagged.context_length, flagged.context_source) == (2048, "--context-length 2048")
    # What transformers' apply_chat_template and 1.6.1's frontend both counted for the same
    # prompts on this model (measured).
    assert facts.chat_prompt_tokens([{"role": "user", "content": "Say hello."}]) == 18
    assert facts.prompt_tokens("Hello") == 2
    assert model_facts.read(tmp_path / "nothing-here") == model_facts.ModelFacts(
        tmp_path / "nothing-here"
    )
    assert model_facts.ModelFacts().prompt_tokens("Hello") is None


def test_a_topology_sends_the_listing_and_its_kinds_cheap_or_every_shape():
    cheap = shapes.selected(("chat", "completion"), CHEAP_SHAPES)
    every = shapes.selected(("chat", "completion"), EVERY_SHAPE)
    assert cheap[0].label == every[0].label == "listing[default]"
    assert {s.label for s in cheap} < {s.label for s in every}
    assert "chat[stop]" not in {s.label for s in cheap}
    assert all(s.kind in ("listing", "chat", "completion") for s in every)
    payload = shapes.shape("rerank", "no-top-n").apply({"top_n": 2, "query": "q"})
    assert payload == {"query": "q"}


def test_a_chat_template_is_found_where_models_keep_it(tmp_path: Path):
    """tokenizer_config.json's chat_template (a string, or named templates), else
    chat_template.jinja, else chat_template.json; special tokens bound by name."""
    model_dir = write_text_model(tmp_path / "text")
    config_file = model_dir / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    template = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    messages = [{"role": "user", "content": "Hello"}]
    config["chat_template"] = [{"name": "default", "template": template}]
    config_file.write_text(json.dumps(config))
    named = model_facts.read(model_dir).chat_prompt_tokens(messages)
    del config["chat_template"]
    config_file.write_text(json.dumps(config))
    model_facts._chat_template.cache_clear()
    (model_dir / "chat_template.jinja").write_text(template)
    from_file = model_facts.read(model_dir).chat_prompt_tokens(messages)
    model_facts._chat_template.cache_clear()
    # the template's <|endoftext|> (bos) and "Hello" (2 tokens): as rendered, no more added
    assert named == from_file == 3
    (model_dir / "chat_template.jinja").unlink()
    assert model_facts.read(model_dir).chat_prompt_tokens(messages) is None
    model_facts._chat_template.cache_clear()
