"""Faults that keep a worker's registration right and make its answers wrong: a 200 that
breaks one promise of its API (harness/serving/answers.py checks each). Off by default; a
worker gets one with `HARNESS_FAULT=bad-answer-...` like any fault in workers/faults.py.

Text answers and token counts are broken in the engine (the CPU stand-in generates nothing,
or past max_tokens, or miscounts the prompt); the card's context length where the worker
registers; the other kinds in what the worker's request handler yields, which the frontend
passes on as the answer. Heavy imports happen only when a fault is installed: this module's
names are read by the harness (stdlib only).
"""

from __future__ import annotations

import base64
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

BAD_ANSWERS = (
    "bad-answer-empty-text",
    "bad-answer-overlong",
    "bad-answer-embedding-count",
    "bad-answer-embedding-order",
    "bad-answer-embedding-dimension",
    "bad-answer-rerank-order",
    "bad-answer-rerank-top-n",
    "bad-answer-rerank-index",
    "bad-answer-image-size",
    "bad-answer-image-format",
    "bad-answer-video-format",
    "bad-answer-video-status",
    # Against the model (its config and tokenizer), and the shapes beyond the default:
    "bad-answer-prompt-tokens",
    "bad-answer-embedding-model-dimension",
    "bad-answer-embedding-dimensions-ignored",
    "bad-answer-rerank-documents",
    "bad-answer-image-count",
    "bad-answer-context-length",
)
_ENGINE_FAULTS = ("bad-answer-empty-text", "bad-answer-overlong", "bad-answer-prompt-tokens")
# A context length no model of the catalogue has: the card registered with it is wrong.
WRONG_CONTEXT_LENGTH = 1000
NOT_MEDIA = base64.b64encode(b"this is not an image or a video").decode()


def _say(fault: str, detail: str) -> None:
    print(f"HARNESS-FAULT {fault}: {detail}", flush=True)


def _smaller_png() -> str:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (0, 0, 0)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _embedding(fault: str, answer: dict[str, Any], _request: Any) -> dict[str, Any]:
    items = answer.get("data")
    if not isinstance(items, list) or not items:
        return answer
    if fault == "bad-answer-embedding-count":
        answer["data"] = items[:-1]
    elif fault == "bad-answer-embedding-order":
        answer["data"] = list(reversed(items))
    elif fault == "bad-answer-embedding-model-dimension":  # one dimension, not the model's
        for item in items:
            item["embedding"] = _one_dimension_less(item["embedding"])
    elif fault == "bad-answer-embedding-dimension":  # one vector shorter than the others
        items[-1]["embedding"] = _one_dimension_less(items[-1]["embedding"])
    return answer


def _one_dimension_less(vector: Any) -> Any:
    """A float list, or (1.6.1's worker-to-frontend wire format) base64 of float32s."""
    if isinstance(vector, list):
        return vector[:-1]
    return base64.b64encode(base64.b64decode(vector)[:-4]).decode()


def _rerank(fault: str, ranked: list[dict[str, Any]], request: Any) -> list[dict[str, Any]]:
    documents = list((request or {}).get("documents") or [])
    if fault == "bad-answer-rerank-order":
        return list(reversed(ranked))
    if fault == "bad-answer-rerank-index":
        ranked[0]["index"] = len(documents)
        return ranked
    if fault == "bad-answer-rerank-documents":  # the scores without the documents asked for
        return [{k: v for k, v in result.items() if k != "document"} for result in ranked]
    unused = [i for i in range(len(documents)) if i not in {r["index"] for r in ranked}]
    if unused:  # one result past top_n, scored below the rest
        lowest = min(r["score"] for r in ranked)
        extra = {"score": lowest - 1.0, "index": unused[0], "document": documents[unused[0]]}
        ranked = [*ranked, extra]
    return ranked


def _media(fault: str, answer: dict[str, Any], _request: Any) -> dict[str, Any]:
    items = answer.get("data") or []
    if fault == "bad-answer-video-status":
        answer["status"], answer["progress"] = "in_progress", 50
    elif fault == "bad-answer-image-count":  # one image fewer than n
        answer["data"] = items[:-1]
    elif items and fault == "bad-answer-image-size":
        items[0]["b64_json"] = _smaller_png()
    elif items:
        items[0]["b64_json"] = NOT_MEDIA
    return answer


def _breaker(fault: str) -> Callable[[Any, Any], Any]:
    """The transformation of one yielded answer for `fault` (others pass unchanged)."""

    def breaks(answer: Any, request: Any) -> Any:
        if isinstance(answer, list) and answer and "score" in answer[0]:
            return _rerank(fault, answer, request) if "rerank" in fault else answer
        if not isinstance(answer, dict):
            return answer
        if "embedding" in fault and answer.get("object") == "list":
            return _embedding(fault, answer, request)
        if ("image" in fault or "video" in fault) and "data" in answer:
            return _media(fault, answer, request)
        return answer

    return breaks


def _break_engine_text(fault: str) -> None:
    """The CPU engine stand-in generates no token, ignores max_tokens, or counts one prompt
    token more than the prompt has (generating and embedding)."""
    from discovery_harness_workers import scheduler_faults

    if scheduler_faults.current_era():
        scheduler_faults.break_generation(fault)
        return
    from discovery_harness_workers.stand_in_generation import StandInGeneration

    real = StandInGeneration._stream
    if fault == "bad-answer-prompt-tokens":
        counted = StandInGeneration._input_tokens

        def miscounted(self: Any, item: Any) -> int:
            return counted(self, item) + 1

        StandInGeneration._input_tokens = miscounted  # type: ignore[method-assign]

    async def stream(
        self: Any, reply: list[int], rid: str, prompt_tokens: int, max_new: int
    ) -> AsyncIterator[dict[str, Any]]:
        if fault == "bad-answer-overlong":
            reply, max_new = list(self._reply_ids) * 2, 10**6
        if fault == "bad-answer-prompt-tokens":
            prompt_tokens += 1
        async for chunk in real(self, reply, rid, prompt_tokens, max_new):
            if fault == "bad-answer-empty-text":
                chunk = {**chunk, "output_ids": []}
                chunk["meta_info"] = {**chunk["meta_info"], "completion_tokens": 0}
            yield chunk

    StandInGeneration._stream = stream  # type: ignore[method-assign]  # the fault itself


def _wrong_context_length() -> None:
    """The worker registers a card whose context length is not its model's (the frontend
    lists the model with it too)."""
    import importlib

    register: Any = importlib.import_module("dynamo.sglang.register")
    real = register.register_model

    async def registered(*args: Any, **kwargs: Any) -> Any:
        config = kwargs.get("runtime_config")
        if config is not None:
            _say("bad-answer-context-length", f"registering context {WRONG_CONTEXT_LENGTH}")
            config.context_length = WRONG_CONTEXT_LENGTH
        return await real(*args, **kwargs)

    register.register_model = registered


def _without_dimensions(request: Any) -> Any:
    """The request as a handler that ignores `dimensions` reads it."""
    if isinstance(request, dict) and "dimensions" in request:
        return {k: v for k, v in request.items() if k != "dimensions"}
    return request


def install(fault: str, replace_generates: Callable[[Callable[..., Any]], None]) -> None:
    """Install `fault` (one of BAD_ANSWERS); `replace_generates` is the faults module's way of
    wrapping every request handler's generate."""
    _say(fault, "answers will be wrong, registration is not touched")
    if fault in _ENGINE_FAULTS:
        _break_engine_text(fault)
        return
    if fault == "bad-answer-context-length":
        _wrong_context_length()
        return
    breaks = _breaker(fault)
    ignores_dimensions = fault == "bad-answer-embedding-dimensions-ignored"

    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)  # Dynamo reads the handler's signature to decide what it passes
        async def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
            if ignores_dimensions and args:
                args = (_without_dimensions(args[0]), *args[1:])
            request = args[0] if args else kwargs.get("request")
            async for answer in real(self, *args, **kwargs):
                yield breaks(answer, request)

        return generate

    replace_generates(wrap)
