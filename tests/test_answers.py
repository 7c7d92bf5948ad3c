"""Every promise discovery_harness.serving.answers checks, shown failing on a hand-made answer: good
answers (as 1.6.1's frontend gives them) pass, and each mutation is caught with its own
message. The ones a worker can break are also injected into real workers
(scenarios/test_answer_selftests.py); the ones only the frontend makes (SSE framing, ids,
objects) are shown here."""

from __future__ import annotations

import base64
import copy
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from discovery_harness.serving import answers, media_answers, pooled_answers

pytestmark = pytest.mark.unit

MODEL = "m"
ASKED = answers.Asked(MODEL, max_tokens=8, inputs=("a", "b"), documents=("x", "y", "z"), top_n=2)


def _png(size: int) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": MODEL,
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "length"}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13},
}
COMPLETION = {
    "id": "cmpl-1",
    "object": "text_completion",
    "model": MODEL,
    "choices": [{"index": 0, "text": "Hi", "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5},
}
EMBEDDING = {
    "object": "list",
    "model": MODEL,
    "data": [
        {"index": 0, "object": "embedding", "embedding": [0.1, 0.2]},
        {"index": 1, "object": "embedding", "embedding": [0.3, 0.4]},
    ],
    "usage": {"prompt_tokens": 4, "total_tokens": 4},
}
RERANK = [
    {"score": 0.9, "index": 1, "document": "y"},
    {"score": 0.3, "index": 0, "document": "x"},
]
IMAGE = {"created": 1, "data": [{"b64_json": _png(32)}]}
VIDEO = {
    "id": "video-1",
    "object": "video",
    "model": MODEL,
    "status": "completed",
    "data": [
        {"output_format": "mp4", "b64_json": base64.b64encode(b"\0\0\0\x1cftypisom").decode()}
    ],
}


def _chunk(delta: dict[str, Any], finish: str | None, **fields: Any) -> dict[str, Any]:
    chunk = {
        "id": "c-1",
        "object": "chat.completion.chunk",
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return {**chunk, **fields}


def _sse(*events: Any, done: int = 1) -> str:
    lines = [f"data: {json.dumps(e)}" if not isinstance(e, str) else e for e in events]
    return "\n\n".join([*lines, *["data: [DONE]"] * done]) + "\n\n"


GOOD_STREAM = (
    _chunk({"role": "assistant", "content": "He"}, None),
    _chunk({"content": "y"}, "stop"),
)


def test_good_answers_pass():
    assert answers.chat(CHAT, ASKED) == []
    assert answers.completion(COMPLETION, ASKED) == []
    assert pooled_answers.embedding(EMBEDDING, ASKED) == []
    assert pooled_answers.rerank(RERANK, ASKED) == []
    assert pooled_answers.rerank({"results": RERANK}, ASKED) == []  # the other shape Dynamo used
    assert media_answers.image(IMAGE, answers.Asked(MODEL, size=(32, 32))) == []
    assert media_answers.video(VIDEO, ASKED) == []
    assert answers.chat_stream(_sse(*GOOD_STREAM), ASKED) == []


def _set(path: str, value: Any) -> Callable[[Any], Any]:
    """A mutation: set the value at a dotted path (numbers index lists)."""

    def mutate(answer: Any) -> Any:
        answer = copy.deepcopy(answer)
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target = answer
        for part in parents:
            target = target[part]
        target[last] = value
        return answer

    return mutate


@pytest.mark.parametrize(
    ("judge", "good", "mutate", "says"),
    [
        (answers.chat, CHAT, _set("object", "chat"), "object 'chat'"),
        (answers.chat, CHAT, _set("id", ""), "no id"),
        (answers.chat, CHAT, _set("model", "other"), "model 'other', expected 'm'"),
        (answers.chat, CHAT, _set("choices.0.index", 1), "choice index 1"),
        (answers.chat, CHAT, _set("choices.0.finish_reason", None), "finish_reason None"),
        (answers.chat, CHAT, _set("choices.0.message.role", "user"), "message role 'user'"),
        (answers.chat, CHAT, _set("choices.0.message.content", ""), "empty message content"),
        (answers.chat, CHAT, _set("usage.prompt_tokens", 0), "usage.prompt_tokens 0"),
        (answers.chat, CHAT, _set("usage.completion_tokens", 9), "completion_tokens 9"),
        (answers.chat, CHAT, _set("usage.total_tokens", 12), "usage.total_tokens 12"),
        (answers.chat, CHAT, _set("choices", []), "0 choices, expected 1"),
        (answers.completion, COMPLETION, _set("choices.0.text", ""), "empty text"),
        (answers.completion, COMPLETION, _set("object", "chat"), "object 'chat'"),
        (
            answers.completion,
            COMPLETION,
            _set("choices.0.finish_reason", "length"),
            "finish_reason length after 3 tokens, max_tokens 8",
        ),
        (pooled_answers.embedding, EMBEDDING, _set("data.1.index", 0), "indices [0, 0]"),
        (
            pooled_answers.embedding,
            EMBEDDING,
            _set("data.1.object", "x"),
            "object is not 'embedding'",
        ),
        (pooled_answers.embedding, EMBEDDING, _set("data.1.embedding", [0.1, 0.2]), "identical"),
        (pooled_answers.embedding, EMBEDDING, _set("data.1.embedding", []), "not a non-empty list"),
        (pooled_answers.embedding, EMBEDDING, _set("usage.prompt_tokens", 0), "usage"),
        (pooled_answers.embedding, EMBEDDING, _set("object", "dict"), "object 'dict'"),
        (pooled_answers.rerank, RERANK, _set("0.document", "z"), "carries document 'z'"),
        (pooled_answers.rerank, RERANK, _set("1.index", 1), "repeat a document"),
        (pooled_answers.rerank, RERANK, _set("1.score", "high"), "expected numbers"),
        (media_answers.image, IMAGE, _set("data.0.b64_json", "%%%"), "b64_json is not base64"),
        (media_answers.image, IMAGE, _set("created", None), "no created time"),
        (media_answers.image, IMAGE, _set("data", []), "0 images, expected n=1"),
        (media_answers.video, VIDEO, _set("object", "list"), "object 'list'"),
        (media_answers.video, VIDEO, _set("data.0.output_format", "webm"), "output_format 'webm'"),
        (media_answers.video, VIDEO, _set("data", []), "no video in data[]"),
    ],
)
def test_each_broken_promise_is_named(judge, good, mutate, says):
    asked = answers.Asked(
        MODEL, max_tokens=8, inputs=("a", "b"), documents=("x", "y", "z"), top_n=2, size=(32, 32)
    )
    problems = judge(mutate(good), asked)
    assert any(says in p for p in problems), problems


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (_sse(*GOOD_STREAM, done=0), "does not end with 'data: [DONE]'"),
        (_sse(*GOOD_STREAM, done=2), "2 'data: [DONE]' lines"),
        (_sse(GOOD_STREAM[0], "event: ping", GOOD_STREAM[1]), "line not 'data: ...'"),
        (_sse(GOOD_STREAM[0], "data: {not json", GOOD_STREAM[1]), "not JSON"),
        (_sse(GOOD_STREAM[1], GOOD_STREAM[0]), "the first delta does not say role"),
        (_sse(GOOD_STREAM[0], _chunk({"content": "y"}, "stop", id="c-2")), "expected one"),
        (_sse(GOOD_STREAM[0], _chunk({"content": "y"}, None)), "finish_reason on chunk(s) []"),
        (_sse(_chunk({"role": "assistant"}, "stop"), GOOD_STREAM[1]), "chunk(s) [0, 1]"),
        (_sse(GOOD_STREAM[0], _chunk({"content": "y"}, "stop", model="x")), "another model"),
        (
            _sse(GOOD_STREAM[0], _chunk({"content": "y"}, "stop", object="chat.completion")),
            "expected chat.completion.chunk",
        ),
        (
            _sse(_chunk({"role": "assistant"}, None), _chunk({}, "stop")),
            "no streamed content",
        ),
    ],
)
def test_each_broken_stream_promise_is_named(raw, says):
    problems = answers.chat_stream(raw, ASKED)
    assert any(says in p for p in problems), problems
