"""The requests a topology can declare, each with what a good answer looks like.

A kind maps to one OpenAI-compatible call and a judge of its response
(discovery_harness.serving.answers
and beside it): a 200 is judged on everything its API promises, not just its status. Each kind
is sent in the shapes of discovery_harness.serving.shapes (the default when none is named), and
judged
against the served model too (discovery_harness.serving.model_facts: its dimension, context length
and
tokenizer) where its files are local.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from discovery_harness.serving import answers, media_answers, pooled_answers
from discovery_harness.serving.http_client import RecordingClient, request_id_of
from discovery_harness.serving.media_server import image_url, png_bytes
from discovery_harness.serving.model_facts import NO_FACTS, ModelFacts
from discovery_harness.serving.shapes import DEFAULT, IMAGE_URL, LISTING, Shape, shape

# Why a request was sent: one of the topology's declared requests (judged on its answer),
# a malformed one (serving/bad_input.py: judged on its refusal), the kind's default request
# right after its bad inputs (the worker must still serve), or a step of the LoRA cycle.
DECLARED, BAD_INPUT, AFTER_BAD_INPUT = "declared", "bad-input", "after-bad-input"
LORA_CYCLE = "lora-cycle"


@dataclass(frozen=True)
class Reply:
    kind: str
    path: str
    status: int
    problem: str | None  # None when the response is good
    body: str
    shape: str = DEFAULT  # a bad input's name where purpose is BAD_INPUT
    purpose: str = DECLARED
    request_id: str = ""  # finds its exchange and its lines in the logs

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def label(self) -> str:
        return f"{self.kind}[{self.shape}]"

    def describe(self) -> str:
        verdict = "ok" if self.ok else f"BAD: {self.problem}"
        method = "GET" if self.kind == LISTING else "POST"
        return (
            f"{self.label}: {method} {self.path} -> {self.status} ({verdict}); "
            f"body: {self.body[:400]}"
        )


def tiny_png_data_url() -> str:
    """A small PNG as a data: URL (there is no internet to fetch an image from)."""
    return "data:image/png;base64," + base64.b64encode(png_bytes()).decode()


def chat_messages(image: str | None) -> list[dict[str, Any]]:
    if image is None:
        return [{"role": "user", "content": "Say hello."}]
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": image}},
            ],
        }
    ]


MAX_TOKENS = 8

Judge = Callable[[Any, answers.Asked], list[str]]


@dataclass(frozen=True)
class Request:
    """One request as sent: where, what, and how its answer is judged."""

    path: str
    payload: dict[str, Any]
    asked: answers.Asked
    judge: Judge
    json_object: bool = True  # the answer is a JSON object (a rerank answer is a list)
    method: str = "POST"


def _text(
    payload: dict[str, Any], model: str, prompt_tokens: int | None, **more: Any
) -> answers.Asked:
    """What a chat or completion request asked for, read from its payload."""
    return answers.Asked(
        model,
        max_tokens=payload["max_tokens"],
        prompt_tokens=prompt_tokens,
        stop=tuple(payload.get("stop") or ()),
        include_usage=bool((payload.get("stream_options") or {}).get("include_usage")),
        **more,
    )


def _chat(model: str, shape_: Shape, facts: ModelFacts, *, image: bool, stream: bool) -> Request:
    source = (image_url() if shape_.name == IMAGE_URL else tiny_png_data_url()) if image else None
    base = {"model": model, "messages": chat_messages(source), "max_tokens": MAX_TOKENS}
    payload = shape_.apply({**base, **({"stream": True} if stream else {})})
    counted = facts.chat_prompt_tokens(payload["messages"])
    how = "the messages under the model's chat template and tokenizer"
    if image:
        how += ", each image as its placeholder (the answer adds its image tokens)"
    asked = _text(payload, model, counted, prompt_tokens_floor=image, counted_as=how)
    streamed = payload.get("stream", False)
    judge = answers.chat_stream if streamed else answers.chat
    return Request("/v1/chat/completions", payload, asked, judge)


def _completion(model: str, shape_: Shape, facts: ModelFacts) -> Request:
    payload = shape_.apply({"model": model, "prompt": "Hello", "max_tokens": MAX_TOKENS})
    asked = _text(payload, model, facts.prompt_tokens(payload["prompt"]))
    judge = answers.completion_stream if payload.get("stream") else answers.completion
    return Request("/v1/completions", payload, asked, judge)


def _embedding(model: str, shape_: Shape, facts: ModelFacts) -> Request:
    base = {"model": model, "input": ["the quick brown fox", "a red square"]}
    payload = shape_.apply(base)
    given = payload["input"]
    if isinstance(given, str) or (given and isinstance(given[0], int)):
        given = [given]  # one input: a string, or one list of token ids
    inputs = tuple(tuple(i) if isinstance(i, list) else i for i in given)
    counts = [len(i) if isinstance(i, tuple) else facts.prompt_tokens(i) for i in inputs]
    asked = answers.Asked(
        model,
        inputs=inputs,
        prompt_tokens=None if None in counts else sum(c for c in counts if c is not None),
        counted_as="the inputs under the model's tokenizer, token ids as given",
        dimension=payload.get("dimensions") or facts.hidden_size,
        encoding=payload.get("encoding_format", "float"),
    )
    return Request("/v1/embeddings", payload, asked, pooled_answers.embedding)


def _rerank(model: str, shape_: Shape, facts: ModelFacts) -> Request:
    documents = ["foxes jump", "etcd stores keys", "red squares"]
    base = {
        "model": model,
        "query": "what jumps?",
        "documents": documents,
        "top_n": 2,
        "return_documents": True,
    }
    payload = shape_.apply(base)
    asked = answers.Asked(
        model,
        documents=tuple(documents),
        top_n=payload.get("top_n"),
        return_documents=payload.get("return_documents", True),
    )
    return Request("/v1/rerank", payload, asked, pooled_answers.rerank, json_object=False)


# Sizes the real pipelines accept, as Dynamo's own diffusion tests send them
# (tests/serve/test_sglang.py): Z-Image 512x512 in 4 steps; Wan 256x256, 9 frames, 3 steps.
# Wan takes 4k+1 frames and sglang's text-to-video config does not round a count that is not.
IMAGE_SIZE, IMAGE_STEPS = "512x512", 4
VIDEO_SIZE, VIDEO_FRAMES, VIDEO_STEPS = "256x256", 9, 3


def _image(model: str, shape_: Shape, facts: ModelFacts) -> Request:
    base = {
        "model": model,
        "prompt": "a red square",
        "size": IMAGE_SIZE,
        "response_format": "b64_json",
        "n": 1,
        "nvext": {"num_inference_steps": IMAGE_STEPS},
    }
    payload = shape_.apply(base)
    width, height = (int(n) for n in payload["size"].split("x"))
    asked = answers.Asked(model, count=payload["n"], size=(width, height))
    return Request("/v1/images/generations", payload, asked, media_answers.image)


def _video(model: str, shape_: Shape, facts: ModelFacts) -> Request:
    payload = {
        "model": model,
        "prompt": "a red square",
        "size": VIDEO_SIZE,
        "seconds": 1,
        "response_format": "b64_json",
        "nvext": {"num_frames": VIDEO_FRAMES, "fps": 8, "num_inference_steps": VIDEO_STEPS},
    }
    return Request("/v1/videos", shape_.apply(payload), answers.Asked(model), media_answers.video)


def _listing(model: str, shape_: Shape, facts: ModelFacts) -> Request:
    asked = answers.Asked(
        model, context_length=facts.context_length, context_source=facts.context_source
    )
    return Request("/v1/models", {}, asked, answers.listing, method="GET")


Builder = Callable[[str, Shape, ModelFacts], Request]

KINDS: dict[str, Builder] = {
    "chat": lambda m, s, f: _chat(m, s, f, image=False, stream=False),
    "chat-stream": lambda m, s, f: _chat(m, s, f, image=False, stream=True),
    "chat-image": lambda m, s, f: _chat(m, s, f, image=True, stream=False),
    "chat-image-stream": lambda m, s, f: _chat(m, s, f, image=True, stream=True),
    "completion": _completion,
    "embedding": _embedding,
    "rerank": _rerank,
    "image": _image,
    "video": _video,
    LISTING: _listing,
}


def _json(reply_body: str) -> Any:
    try:
        return json.loads(reply_body)
    except ValueError:
        return None


def send(
    kind: str,
    client: RecordingClient,
    model: str,
    shape_name: str = DEFAULT,
    facts: ModelFacts = NO_FACTS,
    purpose: str = DECLARED,
) -> Reply:
    """Send `kind` in the named shape and judge its answer (a non-200 only by its status)."""
    request = KINDS[kind](model, shape(kind, shape_name), facts)
    if request.payload.get("stream"):
        status, _events = client.stream_sse(request.path, request.payload)
        body, request_id = client.exchanges[-1].body, client.exchanges[-1].request_id
        data: Any = body
    else:
        if request.method == "GET":
            reply = client.get(request.path)
        else:
            reply = client.post_json(request.path, request.payload)
        status, body, data = reply.status_code, reply.text, _json(reply.text)
        request_id = request_id_of(reply)
    if status != 200:
        refused = f"status {status}"
        return Reply(kind, request.path, status, refused, body, shape_name, purpose, request_id)
    if request.json_object and not request.payload.get("stream") and not isinstance(data, dict):
        problems = ["the body is not a JSON object"]
    else:
        problems = request.judge(data, request.asked)
    problem = "; ".join(problems) or None
    return Reply(kind, request.path, 200, problem, body, shape_name, purpose, request_id)
