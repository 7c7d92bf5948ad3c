"""What an answer must be, per request kind: everything the OpenAI-compatible API (as Dynamo's
frontend serves it) promises, not only "non-empty". A worker that registers right and answers
200 with a wrong answer is a broken deployment too.

Per kind (the README's "What an answer must be" has the same as a table):

- chat, chat-image: `object` chat.completion, an `id`, `model` = the requested name, one
  choice with `index` 0, `message.role` assistant, non-empty `message.content`,
  `finish_reason` stop or length; `usage`: prompt_tokens > 0, 0 < completion_tokens <=
  max_tokens (= max_tokens when the reason is length), total = prompt + completion.
- chat-stream, chat-image-stream: every line `data: ...`, JSON events, then one
  `data: [DONE]`, last; every event a chat.completion.chunk with one `id`, the requested
  `model`, choice `index` 0; the first delta says `role` assistant; non-empty content; the
  last choice event, and only it, carries `finish_reason` (stop or length).
- completion: `object` text_completion, `id`, `model`, one choice with `index` 0, non-empty
  `text`, `finish_reason` stop or length; `usage` as for chat.
- embedding: `object` list, `model`, one item per input in input order (`data[i].index` = i,
  `object` embedding), vectors non-empty, numeric, of one dimension, distinct for distinct
  inputs; `usage.prompt_tokens` > 0 and total_tokens >= prompt_tokens.
- rerank: min(top_n, documents) results, best first, each `index` a distinct position in the
  documents, a numeric `score` (`relevance_score`), its `document` the one at that index.
- image: `created`, `n` items, each `b64_json` a PNG, JPEG or WebP of the requested size.
- video: `object` video, `id`, `model`, `status` completed, `data[0].b64_json` an MP4
  (`ftyp` box), `output_format` mp4 when given.

Each judge returns the problems it found (empty: a good answer). Dynamo's frontend adds the
framing, ids and `created`; the worker's engine decides content, counts, order and media: the
self-tests break the latter inside a worker (workers/faults.py, `bad-answer-*`) and the former
on hand-made answers (tests/test_answers.py).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
from dataclasses import dataclass
from typing import Any

FINISH_REASONS = ("stop", "length")
IMAGE_MAGIC = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG", b"RIFF": "WebP"}


@dataclass(frozen=True)
class Asked:
    """What the request asked for, as far as the answer must follow it."""

    model: str
    max_tokens: int = 8
    inputs: tuple[str, ...] = ()  # embedding inputs
    documents: tuple[str, ...] = ()  # rerank documents
    top_n: int | None = None
    count: int = 1  # images
    size: tuple[int, int] | None = None  # width, height


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _common(data: dict[str, Any], obj: str, asked: Asked) -> list[str]:
    problems = []
    if data.get("object") != obj:
        problems.append(f"object {data.get('object')!r}, expected {obj!r}")
    if not data.get("id"):
        problems.append("no id")
    if data.get("model") != asked.model:
        problems.append(f"model {data.get('model')!r}, expected {asked.model!r}")
    return problems


def _usage(usage: Any, asked: Asked, finish: Any) -> list[str]:
    if not isinstance(usage, dict):
        return ["no usage"]
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    total = usage.get("total_tokens")
    if not (isinstance(prompt, int) and prompt > 0):
        return [f"usage.prompt_tokens {prompt!r}, expected > 0"]
    if not (isinstance(completion, int) and 0 < completion <= asked.max_tokens):
        return [f"usage.completion_tokens {completion!r}, expected 1..{asked.max_tokens}"]
    problems = []
    if finish == "length" and completion != asked.max_tokens:
        problems.append(
            f"finish_reason length after {completion} tokens, max_tokens {asked.max_tokens}"
        )
    if total != prompt + completion:
        problems.append(f"usage.total_tokens {total!r} != {prompt} + {completion}")
    return problems


def _one_choice(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    choices = data.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        count = len(choices) if isinstance(choices, list) else choices
        return {}, [f"{count!r} choices, expected 1"]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    problems = [] if choice.get("index") == 0 else [f"choice index {choice.get('index')!r}"]
    if choice.get("finish_reason") not in FINISH_REASONS:
        problems.append(f"finish_reason {choice.get('finish_reason')!r}, expected stop or length")
    return choice, problems


def chat(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = _common(data, "chat.completion", asked)
    choice, found = _one_choice(data)
    problems += found
    message = choice.get("message") or {}
    if message.get("role") != "assistant":
        problems.append(f"message role {message.get('role')!r}, expected 'assistant'")
    if not (isinstance(message.get("content"), str) and message["content"]):
        problems.append("empty message content")
    return problems + _usage(data.get("usage"), asked, choice.get("finish_reason"))


def completion(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = _common(data, "text_completion", asked)
    choice, found = _one_choice(data)
    problems += found
    if not (isinstance(choice.get("text"), str) and choice["text"]):
        problems.append("empty text")
    return problems + _usage(data.get("usage"), asked, choice.get("finish_reason"))


def sse_events(raw: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The `data:` events of a server-sent-event body, and what breaks the framing."""
    lines = [line for line in raw.splitlines() if line.strip()]
    problems = [
        f"line not 'data: ...': {line[:80]!r}" for line in lines if not line.startswith("data:")
    ]
    payloads = [line[len("data:") :].strip() for line in lines if line.startswith("data:")]
    if not payloads or payloads[-1] != "[DONE]":
        problems.append("the stream does not end with 'data: [DONE]'")
    if payloads.count("[DONE]") > 1:
        problems.append(f"{payloads.count('[DONE]')} 'data: [DONE]' lines")
    events = []
    for payload in payloads:
        if payload == "[DONE]":
            continue
        try:
            events.append(json.loads(payload))
        except ValueError:
            problems.append(f"an event that is not JSON: {payload[:80]!r}")
    return events, problems


def chat_stream(raw: str, asked: Asked) -> list[str]:
    events, problems = sse_events(raw)
    if not events:
        return [*problems, "no events"]
    ids = {event.get("id") for event in events}
    if len(ids) != 1 or None in ids:
        problems.append(f"chunk ids {sorted(map(str, ids))}, expected one")
    objects = {event.get("object") for event in events}
    if objects != {"chat.completion.chunk"}:
        problems.append(f"objects {sorted(map(str, objects))}, expected chat.completion.chunk")
    if {event.get("model") for event in events} != {asked.model}:
        problems.append(f"a chunk names another model than {asked.model!r}")
    choices = [c for event in events for c in event.get("choices") or []]
    if any(c.get("index") != 0 for c in choices):
        problems.append("a choice index other than 0")
    if not choices or (choices[0].get("delta") or {}).get("role") != "assistant":
        problems.append("the first delta does not say role 'assistant'")
    text = "".join((c.get("delta") or {}).get("content") or "" for c in choices)
    if not text:
        problems.append(f"no streamed content ({len(events)} events)")
    finishes = [i for i, c in enumerate(choices) if c.get("finish_reason") is not None]
    if finishes != [len(choices) - 1]:
        problems.append(
            f"finish_reason on chunk(s) {finishes} of {len(choices)}, expected the last"
        )
    elif choices[-1]["finish_reason"] not in FINISH_REASONS:
        problems.append(f"finish_reason {choices[-1]['finish_reason']!r}")
    return problems


def embedding(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = [] if data.get("object") == "list" else [f"object {data.get('object')!r}"]
    if data.get("model") != asked.model:
        problems.append(f"model {data.get('model')!r}, expected {asked.model!r}")
    items = data.get("data") or []
    if len(items) != len(asked.inputs):
        return [*problems, f"{len(items)} embeddings for {len(asked.inputs)} inputs"]
    indices = [item.get("index") for item in items]
    if indices != list(range(len(items))):
        problems.append(f"indices {indices}, expected {list(range(len(items)))} (input order)")
    if any(item.get("object") != "embedding" for item in items):
        problems.append("an item whose object is not 'embedding'")
    vectors = [item.get("embedding") for item in items]
    if not all(isinstance(v, list) and v and all(map(_is_number, v)) for v in vectors):
        return [*problems, "an embedding that is not a non-empty list of numbers"]
    dimensions = sorted({len(v) for v in vectors})
    if len(dimensions) != 1:
        problems.append(f"embeddings of dimensions {dimensions}, expected one")
    if len(set(asked.inputs)) == len(asked.inputs) and len({tuple(v) for v in vectors}) < len(
        vectors
    ):
        problems.append("distinct inputs got identical embeddings")
    usage = data.get("usage") or {}
    prompt = usage.get("prompt_tokens")
    if not (isinstance(prompt, int) and prompt > 0 and (usage.get("total_tokens") or 0) >= prompt):
        problems.append(f"usage {usage!r}: expected prompt_tokens > 0 <= total_tokens")
    return problems


def rerank(data: Any, asked: Asked) -> list[str]:
    results = data if isinstance(data, list) else (data or {}).get("results")
    if not isinstance(results, list):
        return ["no list of results"]
    wanted = min(asked.top_n or len(asked.documents), len(asked.documents))
    problems = [] if len(results) == wanted else [f"{len(results)} results, expected {wanted}"]
    indices = [r.get("index") for r in results]
    if not all(isinstance(i, int) and 0 <= i < len(asked.documents) for i in indices):
        problems.append(f"indices {indices}, expected positions 0..{len(asked.documents) - 1}")
    elif len(set(indices)) != len(indices):
        problems.append(f"indices {indices} repeat a document")
    else:
        for result in results:
            document = result.get("document")
            text = document.get("text") if isinstance(document, dict) else document
            if text is not None and text != asked.documents[result["index"]]:
                problems.append(f"result for index {result['index']} carries document {text!r}")
    scores = [r.get("relevance_score", r.get("score")) for r in results]
    if not all(map(_is_number, scores)):
        problems.append(f"scores {scores}, expected numbers")
    elif scores != sorted(scores, reverse=True):
        problems.append(f"scores {scores} not best first")
    return problems


def _media_bytes(item: dict[str, Any]) -> tuple[bytes | None, str | None]:
    encoded = item.get("b64_json")
    if not isinstance(encoded, str) or not encoded:
        return None, "no b64_json"
    try:
        return base64.b64decode(encoded, validate=True), None
    except (binascii.Error, ValueError):
        return None, "b64_json is not base64"


def image(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = [] if isinstance(data.get("created"), int) else ["no created time"]
    items = data.get("data") or []
    if len(items) != asked.count:
        return [*problems, f"{len(items)} images, expected n={asked.count}"]
    for index, item in enumerate(items):
        raw, problem = _media_bytes(item)
        if raw is None:
            problems.append(f"image {index}: {problem}")
            continue
        kind = next((name for magic, name in IMAGE_MAGIC.items() if raw.startswith(magic)), None)
        if kind is None:
            problems.append(f"image {index} is not a PNG, JPEG or WebP ({raw[:8]!r})")
            continue
        from PIL import Image

        size = Image.open(io.BytesIO(raw)).size
        if asked.size and size != asked.size:
            problems.append(
                f"image {index} is {size[0]}x{size[1]}, asked for {asked.size[0]}x{asked.size[1]}"
            )
    return problems


def video(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = _common(data, "video", asked)
    if data.get("status") != "completed":
        problems.append(f"status {data.get('status')!r}, expected 'completed'")
    items = data.get("data") or []
    if not items:
        return [*problems, "no video in data[]"]
    raw, problem = _media_bytes(items[0])
    if raw is None:
        problems.append(f"video: {problem}")
    elif raw[4:8] != b"ftyp":
        problems.append(f"video is not an MP4 (no ftyp box: {raw[:12]!r})")
    if items[0].get("output_format") not in (None, "mp4"):
        problems.append(f"output_format {items[0].get('output_format')!r}, expected mp4")
    return problems
