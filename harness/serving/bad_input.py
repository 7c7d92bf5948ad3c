"""Malformed requests a client really sends, per endpoint, and what their answer must be.

The API's promise for a request it cannot take: a 4xx with an error body the client can read.
A 5xx blames the server for the client's mistake (clients and routers retry it, alerts fire);
a 200 pretends it worked (an empty or placeholder answer the client takes as the result). Each
bad input is one change to the kind's default request, so what it tests is that one mistake:
a required field missing, a field of the wrong type, a size or format the API does not name,
content the model cannot take (an image sent to a text-only model).

On Dynamo 1.6.1 the frontend answers most of these itself (its typed request parsing); an
image or video size it passes to the worker, whose handler decides (measured per release by
the history run).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from discovery_harness.serving.http_client import RecordingClient, request_id_of
from discovery_harness.serving.model_facts import NO_FACTS
from discovery_harness.serving.requests import (
    BAD_INPUT,
    KINDS,
    Reply,
    chat_messages,
    tiny_png_data_url,
)
from discovery_harness.serving.shapes import DEFAULT, Shape, shape

IMAGE_MESSAGE = "an image"  # a change's value: a user message with an image (built when sent)
IMAGE_KINDS = ("chat-image", "chat-image-stream")


@dataclass(frozen=True)
class BadInput:
    kind: str  # the kind whose default request it changes (and rechecks afterwards)
    name: str
    changes: tuple[tuple[str, Any], ...]  # top-level fields set (None: removed)
    why: str  # the client mistake it is
    text_only: bool = False  # sent only where the topology serves no image kind

    @property
    def label(self) -> str:
        return f"{self.kind}[{self.name}]"

    def payload(self, model: str) -> tuple[str, dict[str, Any]]:
        """The path and the body: the kind's default request with the changes applied, as a
        request shape applies its own (serving/shapes.py)."""
        request = KINDS[self.kind](model, shape(self.kind, DEFAULT), NO_FACTS)
        changes = tuple((key, _resolved(value)) for key, value in self.changes)
        return request.path, Shape(self.kind, self.name, changes).apply(request.payload)


def _resolved(value: Any) -> Any:
    """A change's value as sent: IMAGE_MESSAGE becomes a user message carrying an image."""
    return chat_messages(tiny_png_data_url()) if value == IMAGE_MESSAGE else value


def _bad(kind: str, *inputs: tuple[str, tuple[tuple[str, Any], ...], str]) -> tuple:
    return tuple(BadInput(kind, *given) for given in inputs)


_NO_MESSAGES = ("missing-messages", (("messages", None),), "the required `messages` left out")
_MESSAGES_TEXT = (
    "messages-not-a-list",
    (("messages", "Say hello."),),
    "`messages` a string, not a list of messages",
)
_NO_PROMPT = ("missing-prompt", (("prompt", None),), "the required `prompt` left out")
_UNKNOWN_SIZE = ("unknown-size", (("size", "big"),), "a `size` that is not <width>x<height>")
_UNKNOWN_FORMAT = (
    "unknown-format",
    (("response_format", "gif"),),
    "a `response_format` the API does not name",
)

# By the endpoint's first kind: a topology sends the bad inputs of each path it serves once.
BAD_INPUTS: dict[str, tuple[BadInput, ...]] = {
    "chat": (
        *_bad("chat", _NO_MESSAGES, _MESSAGES_TEXT),
        BadInput(
            "chat",
            "image-to-text-only",
            (("messages", IMAGE_MESSAGE),),
            "an image sent to a model that takes text only",
            text_only=True,
        ),
    ),
    "chat-image": _bad("chat-image", _NO_MESSAGES, _MESSAGES_TEXT),
    "completion": _bad(
        "completion",
        _NO_PROMPT,
        ("prompt-not-text", (("prompt", {"text": "Hello"}),), "`prompt` an object"),
    ),
    "embedding": _bad(
        "embedding",
        ("missing-input", (("input", None),), "the required `input` left out"),
        ("input-not-text", (("input", {"text": "a fox"}),), "`input` an object"),
        ("unknown-encoding", (("encoding_format", "base32"),), "an unknown `encoding_format`"),
    ),
    "rerank": _bad(
        "rerank",
        ("missing-query", (("query", None),), "the required `query` left out"),
        ("documents-not-a-list", (("documents", "foxes jump"),), "`documents` a string"),
    ),
    "image": _bad("image", _UNKNOWN_SIZE, _UNKNOWN_FORMAT, _NO_PROMPT),
    "video": _bad("video", _UNKNOWN_SIZE, _UNKNOWN_FORMAT, _NO_PROMPT),
}
# Kinds sent to the same path: their bad inputs are the first kind's.
SAME_PATH = {"chat-stream": "chat", "chat-image-stream": "chat-image"}


def for_kinds(kinds: Iterable[str]) -> tuple[BadInput, ...]:
    """The bad inputs of every endpoint a topology serves, each once."""
    served = tuple(kinds)
    images = any(k in IMAGE_KINDS for k in served)
    families = dict.fromkeys(SAME_PATH.get(k, k) for k in served)
    # A text chat beside an image chat has one path: its image bad input is not bad there.
    if images and "chat" in families:
        families.pop("chat-image", None)
    chosen = [bad for family in families for bad in BAD_INPUTS.get(family, ())]
    return tuple(bad for bad in chosen if not (bad.text_only and images))


def refusal_problem(status: int, body: str) -> str | None:
    """What is wrong with the answer to a bad input (None: a 4xx with an error body)."""
    if status == 200:
        return f"accepted with 200 ({_excerpt(body)}): the client takes it as the result"
    if status >= 500:
        return f"answered {status}, a server error for the client's mistake ({_excerpt(body)})"
    if not 400 <= status < 500:
        return f"answered {status}, not a 4xx"
    if not _error_body(body):
        return f"answered {status} without an error body ({_excerpt(body)})"
    return None


def _error_body(body: str) -> bool:
    """A JSON object naming the error: OpenAI's `error`, or Dynamo's `message`."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data.get("error") or data.get("message"))


def _excerpt(body: str) -> str:
    text = " ".join(body.split())
    return (text[:160] + "...") if len(text) > 160 else (text or "empty body")


def send_bad(bad: BadInput, client: RecordingClient, model: str) -> Reply:
    """Send one bad input (its exchange marked deliberate: a 4xx there is the promise kept)."""
    path, payload = bad.payload(model)
    answer = client.post_json(path, payload, bad_input=True)
    status, text, request_id = answer.status_code, answer.text, request_id_of(answer)
    problem = refusal_problem(status, text)
    return Reply(bad.kind, path, status, problem, text, bad.name, BAD_INPUT, request_id)
