"""What an answer must be, per request kind: everything the OpenAI-compatible API (as Dynamo's
frontend serves it) promises, not only "non-empty". A worker that registers right and answers
200 with a wrong answer is a broken deployment too.

Per kind (docs/checks.md, "What an answer must be", has the same as a table):

- chat, chat-image: `object` chat.completion, an `id`, `model` = the requested name, one
  choice with `index` 0, `message.role` assistant, non-empty `message.content`,
  `finish_reason` stop or length; `usage`: prompt_tokens > 0, 0 < completion_tokens <=
  max_tokens (= max_tokens when the reason is length), total = prompt + completion.
- chat-stream, chat-image-stream: every line `data: ...`, JSON events, then one
  `data: [DONE]`, last; every event a chat.completion.chunk with one `id`, the requested
  `model`, choice `index` 0; the first delta says `role` assistant; non-empty content; the
  last choice event, and only it, carries `finish_reason` (stop or length); with
  `stream_options.include_usage` one last chunk with empty choices carries the usage (as for
  chat), without it none does.
- completion: `object` text_completion, `id`, `model`, one choice with `index` 0, non-empty
  `text`, `finish_reason` stop or length; `usage` as for chat. Streamed: as chat-stream, with
  text_completion chunks carrying `text`.
- every text kind: `usage.prompt_tokens` is the prompt's length under the model's own
  tokenizer (chat: after its chat template; with an image, at least that); no text contains
  a `stop` sequence it was asked to stop at.
The pooling models' kinds are judged in discovery_harness.serving.pooled_answers, the media kinds in
discovery_harness.serving.media_answers:

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

import json
import math
from dataclasses import dataclass
from typing import Any

FINISH_REASONS = ("stop", "length")


@dataclass(frozen=True)
class Asked:
    """What the request asked for, as far as the answer must follow it."""

    model: str
    max_tokens: int = 8
    # The prompt's length under the model's tokenizer (and chat template); None: unknown
    # (no local tokenizer). With images it is a floor: each image counts as its placeholder
    # there, and as however many tokens the model's image processor makes of it in the answer.
    prompt_tokens: int | None = None
    prompt_tokens_floor: bool = False
    counted_as: str = "the prompt under the model's tokenizer"  # how prompt_tokens was found
    stop: tuple[str, ...] = ()  # stop sequences the text must not contain
    include_usage: bool = False  # a stream's stream_options.include_usage
    inputs: tuple[Any, ...] = ()  # embedding inputs: strings, or lists of token ids
    dimension: int | None = None  # every vector's length: `dimensions`, else the hidden size
    encoding: str = "float"  # embedding encoding_format
    documents: tuple[str, ...] = ()  # rerank documents
    top_n: int | None = None
    return_documents: bool = True
    count: int = 1  # images
    size: tuple[int, int] | None = None  # width, height
    context_length: int | None = None  # the listing's context_window
    context_source: str = ""  # where that length comes from (the config, or a flag)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def common(data: dict[str, Any], obj: str, asked: Asked) -> list[str]:
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
    problems = prompt_tokens(prompt, asked)
    if not (isinstance(completion, int) and 0 < completion <= asked.max_tokens):
        return [
            *problems,
            f"usage.completion_tokens {completion!r}, expected 1..{asked.max_tokens}",
        ]
    if finish == "length" and completion != asked.max_tokens:
        problems.append(
            f"finish_reason length after {completion} tokens, max_tokens {asked.max_tokens}"
        )
    if total != prompt + completion:
        problems.append(f"usage.total_tokens {total!r} != {prompt} + {completion}")
    return problems


def prompt_tokens(counted: Any, asked: Asked) -> list[str]:
    """usage.prompt_tokens against the prompt's length under the model's own tokenizer."""
    wanted = asked.prompt_tokens
    if wanted is None or not isinstance(counted, int):
        return []
    if asked.prompt_tokens_floor:
        if counted >= wanted:
            return []
        return [f"usage.prompt_tokens {counted}, expected at least {wanted} ({asked.counted_as})"]
    if counted == wanted:
        return []
    return [f"usage.prompt_tokens {counted}, expected {wanted} ({asked.counted_as})"]


def _stopped(text: Any, asked: Asked) -> list[str]:
    """A stop sequence ends the text before it: the answer never contains one."""
    found = [stop for stop in asked.stop if isinstance(text, str) and stop in text]
    return [f"text {text!r} contains the stop sequence(s) {found}"] if found else []


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
    problems = common(data, "chat.completion", asked)
    choice, found = _one_choice(data)
    problems += found
    message = choice.get("message") or {}
    if message.get("role") != "assistant":
        problems.append(f"message role {message.get('role')!r}, expected 'assistant'")
    if not (isinstance(message.get("content"), str) and message["content"]):
        problems.append("empty message content")
    problems += _stopped(message.get("content"), asked)
    return problems + _usage(data.get("usage"), asked, choice.get("finish_reason"))


def completion(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = common(data, "text_completion", asked)
    choice, found = _one_choice(data)
    problems += found
    if not (isinstance(choice.get("text"), str) and choice["text"]):
        problems.append("empty text")
    problems += _stopped(choice.get("text"), asked)
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
    return _stream(raw, asked, "chat.completion.chunk", chat_delta=True)


def completion_stream(raw: str, asked: Asked) -> list[str]:
    return _stream(raw, asked, "text_completion", chat_delta=False)


def _stream(raw: str, asked: Asked, obj: str, *, chat_delta: bool) -> list[str]:
    """A chat stream's chunks carry `delta`s (the first says role assistant), a completion
    stream's carry `text`; both end in one finish_reason and, when asked, one usage chunk."""
    events, problems = sse_events(raw)
    if not events:
        return [*problems, "no events"]
    ids = {event.get("id") for event in events}
    if len(ids) != 1 or None in ids:
        problems.append(f"chunk ids {sorted(map(str, ids))}, expected one")
    objects = {event.get("object") for event in events}
    if objects != {obj}:
        problems.append(f"objects {sorted(map(str, objects))}, expected {obj}")
    if {event.get("model") for event in events} != {asked.model}:
        problems.append(f"a chunk names another model than {asked.model!r}")
    choices = [c for event in events for c in event.get("choices") or []]
    if any(c.get("index") != 0 for c in choices):
        problems.append("a choice index other than 0")
    if chat_delta and (not choices or (choices[0].get("delta") or {}).get("role") != "assistant"):
        problems.append("the first delta does not say role 'assistant'")
    if chat_delta:
        text = "".join((c.get("delta") or {}).get("content") or "" for c in choices)
    else:
        text = "".join(c.get("text") or "" for c in choices)
    if not text:
        problems.append(f"no streamed content ({len(events)} events)")
    problems += _stopped(text, asked)
    finishes = [i for i, c in enumerate(choices) if c.get("finish_reason") is not None]
    if finishes != [len(choices) - 1]:
        problems.append(
            f"finish_reason on chunk(s) {finishes} of {len(choices)}, expected the last"
        )
    elif choices[-1]["finish_reason"] not in FINISH_REASONS:
        problems.append(f"finish_reason {choices[-1]['finish_reason']!r}")
    finish = choices[-1].get("finish_reason") if choices else None
    return problems + _stream_usage(events, asked, finish)


def _stream_usage(events: list[dict[str, Any]], asked: Asked, finish: Any) -> list[str]:
    """stream_options.include_usage: one more chunk before [DONE], with empty choices and the
    whole request's usage (every other chunk's usage null); without it, no usage at all."""
    with_usage = [i for i, event in enumerate(events) if event.get("usage") is not None]
    if not asked.include_usage:
        return [f"usage on chunk(s) {with_usage}, not asked for"] if with_usage else []
    if with_usage != [len(events) - 1]:
        return [f"usage on chunk(s) {with_usage} of {len(events)}, expected the last only"]
    last = events[-1]
    problems = [] if last.get("choices") == [] else ["the usage chunk carries choices"]
    return problems + _usage(last["usage"], asked, finish)


def listing(data: dict[str, Any], asked: Asked) -> list[str]:
    """GET /v1/models: the model listed once, as a `model` object whose context_window is the
    model's context length (its config's, or the --context-length its workers serve)."""
    entries = [m for m in data.get("data") or [] if isinstance(m, dict)]
    mine = [m for m in entries if m.get("id") == asked.model]
    if len(mine) != 1:
        return [f"model {asked.model!r} listed {len(mine)} times, expected once"]
    entry = mine[0]
    problems = [] if entry.get("object") == "model" else [f"object {entry.get('object')!r}"]
    window = entry.get("context_window")
    if asked.context_length is not None and window != asked.context_length:
        problems.append(
            f"context_window {window!r}, expected {asked.context_length} "
            f"(the model's: {asked.context_source})"
        )
    return problems
