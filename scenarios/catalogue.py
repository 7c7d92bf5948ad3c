"""Every dynamo.sglang topology the harness guards, with each worker's registration contract.

Adding a mode is adding an entry here: its workers (role, dynamo.sglang flags, model asset,
expected component), the model card each must register, and the requests that prove it serves.
Contracts are those of ai-dynamo 1.6.1 (see README, "Topologies").
"""

from __future__ import annotations

from harness.contract import (
    CHAT_COMPLETIONS,
    CHAT_IMAGES,
    EMBEDDING,
    EMPTY,
    RERANK,
    VIDEOS,
    ExpectedCard,
)
from harness.topology import KnownViolation, Topology, WorkerSpec
from harness.violations import LISTED_EARLY

# Flags every multimodal worker needs on 1.6.1 (nixl-write, the default, needs NIXL).
_MM = ("--enable-multimodal", "--chat-template", "qwen2-vl", "--embedding-transfer-mode", "local")
_DEDICATED = (*_MM, "--dedicated-mm-encoder")


def _worker(role: str, component: str, model: str, card: ExpectedCard, *flags: str) -> WorkerSpec:
    return WorkerSpec(role=role, flags=flags, model=model, component=component, card=card)


_ENCODER_CARD = ExpectedCard(
    CHAT_COMPLETIONS, "Tokens", "encode", (("prefill", "decode"), ("aggregated",))
)
_MM_ENCODER = _worker(
    "mm-encoder",
    "encode",
    "vision-language",
    _ENCODER_CARD,
    *_MM,
    "--disaggregation-mode",
    "encode",
)
_MM_REQUESTS = ("chat-image", "chat-image-stream")
_TEXT_REQUESTS = ("chat", "chat-stream", "completion")

AGGREGATED = Topology(
    name="aggregated",
    workers=(
        _worker(
            "worker", "backend", "text", ExpectedCard(CHAT_COMPLETIONS, "Tokens", "aggregated")
        ),
    ),
    requests=_TEXT_REQUESTS,
)

DISAGGREGATED = Topology(
    name="disaggregated",
    workers=(
        _worker(
            "prefill",
            "prefill",
            "text",
            ExpectedCard("Prefill", "Tokens", "prefill", (("decode",),), public=False),
            "--disaggregation-mode",
            "prefill",
        ),
        _worker(
            "decode",
            "backend",
            "text",
            ExpectedCard(CHAT_COMPLETIONS, "Tokens", "decode", (("prefill",),)),
            "--disaggregation-mode",
            "decode",
        ),
    ),
    requests=_TEXT_REQUESTS,
)

EMBEDDING_TOPOLOGY = Topology(
    name="embedding",
    workers=(
        _worker(
            "embedding",
            "backend",
            "embedding",
            ExpectedCard(EMBEDDING, "Text", "aggregated"),
            "--embedding-worker",
        ),
    ),
    requests=("embedding",),
)

RERANK_TOPOLOGY = Topology(
    name="rerank",
    workers=(
        _worker(
            "rerank",
            "rerank",
            "rerank",
            ExpectedCard(RERANK, "Text", "aggregated"),
            "--rerank-worker",
        ),
    ),
    requests=("rerank",),
)

MM_ENCODE_PD = Topology(
    name="mm-encode-pd",
    workers=(
        _MM_ENCODER,
        _worker(
            "mm-worker",
            "backend",
            "vision-language",
            ExpectedCard(EMPTY, "Tokens", "aggregated", (("encode",),), public=False),
            *_DEDICATED,
            "--disaggregation-mode",
            "pd",
        ),
    ),
    requests=_MM_REQUESTS,
    marks=("multimodal",),
)

MM_ENCODE_P_D = Topology(
    name="mm-encode-p-d",
    workers=(
        _MM_ENCODER,
        _worker(
            "mm-prefill",
            "prefill",
            "vision-language",
            ExpectedCard(EMPTY, "Tokens", "prefill", (("decode",),), public=False),
            *_DEDICATED,
            "--disaggregation-mode",
            "prefill",
        ),
        _worker(
            "mm-decode",
            "backend",
            "vision-language",
            ExpectedCard(EMPTY, "Tokens", "decode", (("prefill",),), public=False),
            *_DEDICATED,
            "--disaggregation-mode",
            "decode",
        ),
    ),
    requests=_MM_REQUESTS,
    marks=("multimodal",),
    known_violations=(
        KnownViolation(
            LISTED_EARLY,
            ("1.6.1",),
            "Dynamo 1.6.1 lists the model in /v1/models as soon as the internal prefill and "
            "decode cards exist, and answers 404 'Model not found' until the encoder's card "
            "is attached (measured: persistent when the encoder never registers)",
        ),
    ),
)

IMAGE_DIFFUSION = Topology(
    name="image-diffusion",
    workers=(
        _worker(
            "image-diffusion",
            "backend",
            "image",
            ExpectedCard(CHAT_IMAGES, "Text", "aggregated"),
            "--image-diffusion-worker",
        ),
    ),
    requests=("image",),
)

VIDEO_GENERATION = Topology(
    name="video-generation",
    workers=(
        _worker(
            "video-generation",
            "backend",
            "video",
            ExpectedCard(VIDEOS, "Text", "aggregated"),
            "--video-generation-worker",
        ),
    ),
    requests=("video",),
)

CATALOGUE: tuple[Topology, ...] = (
    AGGREGATED,
    DISAGGREGATED,
    EMBEDDING_TOPOLOGY,
    RERANK_TOPOLOGY,
    MM_ENCODE_PD,
    MM_ENCODE_P_D,
    IMAGE_DIFFUSION,
    VIDEO_GENERATION,
)


def by_name(name: str) -> Topology:
    return next(t for t in CATALOGUE if t.name == name)
