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


AGGREGATED = Topology(
    name="aggregated",
    workers=(
        WorkerSpec(
            role="worker",
            flags=(),
            model="text",
            component="backend",
            card=ExpectedCard(CHAT_COMPLETIONS, "Tokens", "aggregated"),
        ),
    ),
    requests=("chat", "chat-stream", "completion"),
)

DISAGGREGATED = Topology(
    name="disaggregated",
    workers=(
        WorkerSpec(
            role="prefill",
            flags=("--disaggregation-mode", "prefill"),
            model="text",
            component="prefill",
            card=ExpectedCard("Prefill", "Tokens", "prefill", (("decode",),), public=False),
        ),
        WorkerSpec(
            role="decode",
            flags=("--disaggregation-mode", "decode"),
            model="text",
            component="backend",
            card=ExpectedCard(CHAT_COMPLETIONS, "Tokens", "decode", (("prefill",),)),
        ),
    ),
    requests=("chat", "chat-stream", "completion"),
)

EMBEDDING_TOPOLOGY = Topology(
    name="embedding",
    workers=(
        WorkerSpec(
            role="embedding",
            flags=("--embedding-worker",),
            model="text",
            component="backend",
            card=ExpectedCard(EMBEDDING, "Text", "aggregated"),
        ),
    ),
    requests=("embedding",),
)

RERANK_TOPOLOGY = Topology(
    name="rerank",
    workers=(
        WorkerSpec(
            role="rerank",
            flags=("--rerank-worker",),
            model="cross-encoder",
            component="rerank",
            card=ExpectedCard(RERANK, "Text", "aggregated"),
        ),
    ),
    requests=("rerank",),
)

MM_ENCODE_PD = Topology(
    name="mm-encode-pd",
    workers=(
        WorkerSpec(
            role="mm-encoder",
            flags=(*_MM, "--disaggregation-mode", "encode"),
            model="vision-language",
            component="encode",
            card=ExpectedCard(
                CHAT_COMPLETIONS, "Tokens", "encode", (("prefill", "decode"), ("aggregated",))
            ),
        ),
        WorkerSpec(
            role="mm-worker",
            flags=(*_DEDICATED, "--disaggregation-mode", "pd"),
            model="vision-language",
            component="backend",
            card=ExpectedCard(EMPTY, "Tokens", "aggregated", (("encode",),), public=False),
        ),
    ),
    requests=("chat-image", "chat-image-stream"),
    marks=("multimodal",),
)

MM_ENCODE_P_D = Topology(
    name="mm-encode-p-d",
    workers=(
        WorkerSpec(
            role="mm-encoder",
            flags=(*_MM, "--disaggregation-mode", "encode"),
            model="vision-language",
            component="encode",
            card=ExpectedCard(
                CHAT_COMPLETIONS, "Tokens", "encode", (("prefill", "decode"), ("aggregated",))
            ),
        ),
        WorkerSpec(
            role="mm-prefill",
            flags=(*_DEDICATED, "--disaggregation-mode", "prefill"),
            model="vision-language",
            component="prefill",
            card=ExpectedCard(EMPTY, "Tokens", "prefill", (("decode",),), public=False),
        ),
        WorkerSpec(
            role="mm-decode",
            flags=(*_DEDICATED, "--disaggregation-mode", "decode"),
            model="vision-language",
            component="backend",
            card=ExpectedCard(EMPTY, "Tokens", "decode", (("prefill",),), public=False),
        ),
    ),
    requests=("chat-image", "chat-image-stream"),
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
        WorkerSpec(
            role="image-diffusion",
            flags=("--image-diffusion-worker",),
            model="diffusion",
            component="backend",
            card=ExpectedCard(CHAT_IMAGES, "Text", "aggregated"),
        ),
    ),
    requests=("image",),
)

VIDEO_GENERATION = Topology(
    name="video-generation",
    workers=(
        WorkerSpec(
            role="video-generation",
            flags=("--video-generation-worker",),
            model="diffusion",
            component="backend",
            card=ExpectedCard(VIDEOS, "Text", "aggregated"),
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
