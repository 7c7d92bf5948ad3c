"""The requests a topology can declare, each with what a good answer looks like.

A kind maps to one OpenAI-compatible call and a judge of its response. Judges check content,
not just status: an empty completion from a 200 is a failure too.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from harness.http_client import RecordingClient


@dataclass(frozen=True)
class Reply:
    kind: str
    path: str
    status: int
    problem: str | None  # None when the response is good
    body: str

    @property
    def ok(self) -> bool:
        return self.problem is None

    def describe(self) -> str:
        verdict = "ok" if self.ok else f"BAD: {self.problem}"
        return (
            f"{self.kind}: POST {self.path} -> {self.status} ({verdict}); body: {self.body[:400]}"
        )


def tiny_png_data_url() -> str:
    """A small PNG as a data: URL (there is no internet to fetch an image from)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (220, 40, 40)).save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _chat_messages(with_image: bool) -> list[dict[str, Any]]:
    if not with_image:
        return [{"role": "user", "content": "Say hello."}]
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": tiny_png_data_url()}},
            ],
        }
    ]


def _json(reply_body: str) -> Any:
    import json

    try:
        return json.loads(reply_body)
    except ValueError:
        return None


def _chat(client: RecordingClient, model: str, *, image: bool, stream: bool, kind: str) -> Reply:
    path = "/v1/chat/completions"
    payload = {"model": model, "messages": _chat_messages(image), "max_tokens": 8}
    if stream:
        payload["stream"] = True
        status, events = client.stream_sse(path, payload)
        text = "".join(
            (choice.get("delta") or {}).get("content") or ""
            for event in events
            for choice in event.get("choices", [])
        )
        body = text if status == 200 else client.exchanges[-1].body
        problem = None if status == 200 and text else f"no streamed content ({len(events)} events)"
        return Reply(kind, path, status, problem if status == 200 else f"status {status}", body)
    reply = client.post_json(path, payload)
    data = _json(reply.text) or {}
    content = ((data.get("choices") or [{}])[0].get("message") or {}).get("content")
    return _judge(kind, path, reply, bool(content), "empty message content")


def _judge(kind: str, path: str, reply: httpx.Response, good: bool, what: str) -> Reply:
    if reply.status_code != 200:
        return Reply(kind, path, reply.status_code, f"status {reply.status_code}", reply.text)
    return Reply(kind, path, 200, None if good else what, reply.text)


def _completion(client: RecordingClient, model: str) -> Reply:
    path = "/v1/completions"
    reply = client.post_json(path, {"model": model, "prompt": "Hello", "max_tokens": 8})
    data = _json(reply.text) or {}
    text = (data.get("choices") or [{}])[0].get("text")
    return _judge("completion", path, reply, bool(text), "empty text")


def _embedding(client: RecordingClient, model: str) -> Reply:
    path = "/v1/embeddings"
    inputs = ["the quick brown fox", "a red square"]
    reply = client.post_json(path, {"model": model, "input": inputs})
    data = (_json(reply.text) or {}).get("data") or []
    good = len(data) == len(inputs) and all(item.get("embedding") for item in data)
    return _judge(
        "embedding",
        path,
        reply,
        good,
        f"expected {len(inputs)} non-empty embeddings, got {len(data)}",
    )


def _rerank(client: RecordingClient, model: str) -> Reply:
    path = "/v1/rerank"
    documents = ["foxes jump", "etcd stores keys", "red squares"]
    reply = client.post_json(path, {"model": model, "query": "what jumps?", "documents": documents})
    data = _json(reply.text)
    results = data if isinstance(data, list) else (data or {}).get("results") or []
    good = len(results) == len(documents) and all(
        "relevance_score" in r or "score" in r for r in results
    )
    return _judge(
        "rerank",
        path,
        reply,
        good,
        f"expected {len(documents)} scored results, got {len(results)}",
    )


def _media(kind: str, path: str, client: RecordingClient, payload: dict[str, Any]) -> Reply:
    """Image and video generation: data[0] must carry the media (inline or by URL)."""
    reply = client.post_json(path, payload)
    data = (_json(reply.text) or {}).get("data") or []
    good = bool(data) and bool(data[0].get("b64_json") or data[0].get("url"))
    return _judge(kind, path, reply, good, f"no {kind} in data[]")


# Sizes the real pipelines accept, as Dynamo's own diffusion tests send them
# (tests/serve/test_sglang.py): Z-Image 512x512 in 4 steps; Wan 256x256, 9 frames, 3 steps.
# Wan takes 4k+1 frames and sglang's text-to-video config does not round a count that is not.
IMAGE_SIZE, IMAGE_STEPS = "512x512", 4
VIDEO_SIZE, VIDEO_FRAMES, VIDEO_STEPS = "256x256", 9, 3


def _image(client: RecordingClient, model: str) -> Reply:
    payload = {
        "model": model,
        "prompt": "a red square",
        "size": IMAGE_SIZE,
        "response_format": "b64_json",
        "n": 1,
        "nvext": {"num_inference_steps": IMAGE_STEPS},
    }
    return _media("image", "/v1/images/generations", client, payload)


def _video(client: RecordingClient, model: str) -> Reply:
    payload = {
        "model": model,
        "prompt": "a red square",
        "size": VIDEO_SIZE,
        "seconds": 1,
        "response_format": "b64_json",
        "nvext": {"num_frames": VIDEO_FRAMES, "fps": 8, "num_inference_steps": VIDEO_STEPS},
    }
    return _media("video", "/v1/videos", client, payload)


KINDS: dict[str, Callable[[RecordingClient, str], Reply]] = {
    "chat": lambda c, m: _chat(c, m, image=False, stream=False, kind="chat"),
    "chat-stream": lambda c, m: _chat(c, m, image=False, stream=True, kind="chat-stream"),
    "chat-image": lambda c, m: _chat(c, m, image=True, stream=False, kind="chat-image"),
    "chat-image-stream": lambda c, m: _chat(
        c, m, image=True, stream=True, kind="chat-image-stream"
    ),
    "completion": _completion,
    "embedding": _embedding,
    "rerank": _rerank,
    "image": _image,
    "video": _video,
}


def send(kind: str, client: RecordingClient, model: str) -> Reply:
    return KINDS[kind](client, model)
