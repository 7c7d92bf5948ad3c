"""The requests a topology can declare, each with what a good answer looks like.

A kind maps to one OpenAI-compatible call and a judge of its response
(harness.serving.answers): a 200 is judged on everything its API promises, not just its status.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.serving import answers, media_answers, pooled_answers
from harness.serving.http_client import RecordingClient


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


MAX_TOKENS = 8


Judge = Callable[[Any, answers.Asked], list[str]]


def _judged(kind: str, path: str, status: int, body: str, judge: Callable[[], list[str]]) -> Reply:
    """A 200 is judged on everything its API promises (harness.serving.answers); else its status."""
    if status != 200:
        return Reply(kind, path, status, f"status {status}", body)
    problems = judge()
    return Reply(kind, path, 200, "; ".join(problems) or None, body)


def _post(
    client: RecordingClient,
    kind: str,
    path: str,
    payload: dict[str, Any],
    asked: answers.Asked,
    judge: Judge,
    *,
    json_object: bool = True,
) -> Reply:
    """POST the request and judge its answer (an object, unless `json_object` is False)."""
    reply = client.post_json(path, payload)
    data = _json(reply.text)

    def problems() -> list[str]:
        if json_object and not isinstance(data, dict):
            return ["the body is not a JSON object"]
        return judge(data, asked)

    return _judged(kind, path, reply.status_code, reply.text, problems)


def _chat(client: RecordingClient, model: str, *, image: bool, stream: bool, kind: str) -> Reply:
    path = "/v1/chat/completions"
    payload = {"model": model, "messages": _chat_messages(image), "max_tokens": MAX_TOKENS}
    asked = answers.Asked(model, max_tokens=MAX_TOKENS)
    if not stream:
        return _post(client, kind, path, payload, asked, answers.chat)
    payload["stream"] = True
    status, _events = client.stream_sse(path, payload)
    raw = client.exchanges[-1].body
    return _judged(kind, path, status, raw, lambda: answers.chat_stream(raw, asked))


def _completion(client: RecordingClient, model: str) -> Reply:
    payload = {"model": model, "prompt": "Hello", "max_tokens": MAX_TOKENS}
    asked = answers.Asked(model, max_tokens=MAX_TOKENS)
    return _post(client, "completion", "/v1/completions", payload, asked, answers.completion)


def _embedding(client: RecordingClient, model: str) -> Reply:
    inputs = ("the quick brown fox", "a red square")
    payload = {"model": model, "input": list(inputs)}
    asked = answers.Asked(model, inputs=inputs)
    return _post(client, "embedding", "/v1/embeddings", payload, asked, pooled_answers.embedding)


def _rerank(client: RecordingClient, model: str) -> Reply:
    documents = ("foxes jump", "etcd stores keys", "red squares")
    payload = {
        "model": model,
        "query": "what jumps?",
        "documents": list(documents),
        "top_n": 2,
        "return_documents": True,
    }
    asked = answers.Asked(model, documents=documents, top_n=2)
    return _post(
        client, "rerank", "/v1/rerank", payload, asked, pooled_answers.rerank, json_object=False
    )


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
    width, height = (int(n) for n in IMAGE_SIZE.split("x"))
    asked = answers.Asked(model, count=1, size=(width, height))
    return _post(client, "image", "/v1/images/generations", payload, asked, media_answers.image)


def _video(client: RecordingClient, model: str) -> Reply:
    payload = {
        "model": model,
        "prompt": "a red square",
        "size": VIDEO_SIZE,
        "seconds": 1,
        "response_format": "b64_json",
        "nvext": {"num_frames": VIDEO_FRAMES, "fps": 8, "num_inference_steps": VIDEO_STEPS},
    }
    return _post(client, "video", "/v1/videos", payload, answers.Asked(model), media_answers.video)


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
