"""The shapes real clients send of each request kind, as data: each one a change to the kind's
default request, judged by the same checks (discovery_harness.serving.answers and beside it).

Dynamo's handlers and sglang take a different code path per shape (a string or a list of
token ids to embed, `top_n` or none, a data: URL or an http one), so a break in one shape
passes wherever only the default is sent. A topology declares which it sends
(`Topology.shapes` in the catalogue): the cheap ones of its kinds (`CHEAP_SHAPES`, the
default), or every one (`EVERY_SHAPE`, where the kind is served in the layout that exercises
it best). Each shape is sent once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from discovery_harness.model.topology import CHEAP_SHAPES, EVERY_SHAPE

DEFAULT = "default"
SELECTIONS = (CHEAP_SHAPES, EVERY_SHAPE)
LISTING = "listing"  # GET /v1/models, judged against the model's config: every topology


@dataclass(frozen=True)
class Shape:
    kind: str
    name: str
    changes: tuple[tuple[str, Any], ...] = ()  # top-level request fields set (None: removed)
    cheap: bool = True  # costs no more than the default request: sent by every topology
    why: str = ""  # the code path it reaches that the default does not

    @property
    def label(self) -> str:
        return f"{self.kind}[{self.name}]"

    def apply(self, payload: dict[str, Any]) -> dict[str, Any]:
        changed = dict(payload)
        for key, value in self.changes:
            if value is None:
                changed.pop(key, None)
            else:
                changed[key] = value
        return changed


# The stand-in engine's reply contains "fox"; a real model's is likely to hold a ".".
STOP = ["fox", "."]
LONG_MAX_TOKENS = 32
IMAGE_URL = "image-url"  # the request names an http:// URL the harness serves on 127.0.0.1


def _shapes(kind: str, *shapes: tuple[str, tuple[tuple[str, Any], ...], bool, str]) -> tuple:
    return (Shape(kind, DEFAULT), *(Shape(kind, *shape) for shape in shapes))


_MAX_1 = ("max-tokens-1", (("max_tokens", 1),), True, "a one-token answer: finish length at once")
_STOP = (
    "stop",
    (("max_tokens", LONG_MAX_TOKENS), ("stop", STOP)),
    False,
    "a stop sequence, and max_tokens larger than the default",
)
_USAGE = (("stream_options", {"include_usage": True}),)

SHAPES: dict[str, tuple[Shape, ...]] = {
    "chat": _shapes("chat", _MAX_1, _STOP),
    "chat-stream": _shapes(
        "chat-stream",
        ("include-usage", _USAGE, True, "stream_options.include_usage: a final usage chunk"),
    ),
    "completion": _shapes(
        "completion",
        _MAX_1,
        _STOP,
        ("stream", (("stream", True),), True, "the completion stream"),
        (
            "stream-include-usage",
            (("stream", True), *_USAGE),
            True,
            "the completion stream with a final usage chunk",
        ),
    ),
    "chat-image": _shapes(
        "chat-image",
        (IMAGE_URL, (), False, "an http:// image URL (the default sends a data: URL)"),
    ),
    "chat-image-stream": _shapes("chat-image-stream"),
    "embedding": _shapes(
        "embedding",
        ("one-input", (("input", "the quick brown fox"),), True, "a single string input"),
        ("token-ids", (("input", [5, 6, 7, 8]),), True, "one input as a list of token ids"),
        ("base64", (("encoding_format", "base64"),), True, "encoding_format base64"),
        ("dimensions", (("dimensions", 8),), True, "Matryoshka truncation to `dimensions`"),
    ),
    "rerank": _shapes(
        "rerank",
        ("no-top-n", (("top_n", None),), True, "every document ranked"),
        ("top-n-above", (("top_n", 10),), True, "top_n above the document count"),
        ("no-documents", (("return_documents", False),), True, "scores without the documents"),
    ),
    "image": _shapes(
        "image",
        ("n-2", (("n", 2),), False, "two images for one prompt"),
        ("size", (("size", "384x512"),), False, "another size, width != height"),
    ),
    "video": _shapes("video"),
    LISTING: _shapes(LISTING),
}


def shape(kind: str, name: str = DEFAULT) -> Shape:
    """One shape of a kind; KeyError naming the known ones otherwise."""
    found = next((s for s in SHAPES.get(kind, ()) if s.name == name), None)
    if found is None:
        known = ", ".join(s.label for s in SHAPES.get(kind, ())) or f"no kind {kind!r}"
        raise KeyError(f"no request shape {kind}[{name}] (known: {known})")
    return found


def selected(kinds: Iterable[str], selection: str) -> tuple[Shape, ...]:
    """What a topology sends: the listing, then each kind's cheap shapes, or every shape."""
    if selection not in SELECTIONS:
        raise ValueError(f"shapes {selection!r}: expected one of {', '.join(SELECTIONS)}")
    chosen = [*SHAPES[LISTING]]
    for kind in kinds:
        chosen += [s for s in SHAPES[kind] if selection == EVERY_SHAPE or s.cheap]
    return tuple(chosen)
