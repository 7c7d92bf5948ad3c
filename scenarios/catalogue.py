"""Every dynamo.sglang topology the harness guards, with each worker's registration contract.

Adding a mode is adding an entry here: its workers (role, dynamo.sglang flags, model asset,
expected component), the model card each must register, the requests that prove it serves, and
its GPU profile (layouts on 1 and 2+ GPUs, caps for co-located workers, start order, timeouts).
Contracts are those of ai-dynamo 1.6.1 (see README, "Topologies"); GPU layouts and caps follow
Dynamo's own sglang GPU tests and launch scripts. Both tiers run the same flags: the CPU tier
runs each topology's packed 1-GPU layout.
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
from harness.topology import (
    GpuProfile,
    KnownViolation,
    Placement,
    Topology,
    WorkerPlacement,
    WorkerSpec,
)
from harness.violations import LISTED_EARLY

# The GPU tier's model per asset key; defaults follow Dynamo's own sglang GPU tests and fit a
# 24 GiB runner. Each is overridable with `--model KEY=NAME_OR_PATH`.
GPU_MODELS: dict[str, str] = {
    "text": "Qwen/Qwen3-0.6B",
    "embedding": "Qwen/Qwen3-Embedding-0.6B",
    "rerank": "BAAI/bge-reranker-v2-m3",
    "vision-language": "Qwen/Qwen3-VL-2B-Instruct",
    "image": "Tongyi-MAI/Z-Image-Turbo",
    "video": "Wan-AI/Wan2.1-T2V-1.3B-Diffusers",
}

# KV transfer between prefill and decode: 1.6.1 parses to mooncake by default, which neither
# ai-dynamo[sglang] nor sglang installs; Dynamo's launch scripts pass nixl.
_NIXL = ("--disaggregation-transfer-backend", "nixl")
# Flags every multimodal worker needs on 1.6.1 (nixl-write, the default, needs NIXL).
MULTIMODAL_FLAGS = (
    "--enable-multimodal",
    "--chat-template",
    "qwen2-vl",
    "--embedding-transfer-mode",
    "local",
    "--skip-tokenizer-init",
)
# Dynamo's E/PD launch script always runs dedicated-encoder workers without radix cache.
_DEDICATED = (*MULTIMODAL_FLAGS, "--dedicated-mm-encoder", "--disable-radix-cache", *_NIXL)
# Co-located NIXL workers: UCX's shared-memory and gdr_copy transports clash on one GPU.
_UCX_COLOCATED = (("UCX_TLS", "^mm,gdr_copy"),)
# Batch caps of Dynamo's single-GPU variants.
_SMALL_BATCH = (
    "--max-running-requests",
    "2",
    "--chunked-prefill-size",
    "4096",
    "--max-prefill-tokens",
    "4096",
)


def _alone(role: str, vram_gib: float, start_timeout_s: int = 360) -> GpuProfile:
    """A one-worker topology: one GPU to itself."""
    return GpuProfile(
        (
            Placement(
                1,
                (WorkerPlacement(role, 0, vram_gib=vram_gib),),
                start_timeout_s=start_timeout_s,
            ),
        )
    )


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
    *MULTIMODAL_FLAGS,
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
    gpu=_alone("worker", vram_gib=3.7),
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
            *_NIXL,
        ),
        _worker(
            "decode",
            "backend",
            "text",
            ExpectedCard(CHAT_COMPLETIONS, "Tokens", "decode", (("prefill",),)),
            "--disaggregation-mode",
            "decode",
            *_NIXL,
        ),
    ),
    requests=_TEXT_REQUESTS,
    gpu=GpuProfile(
        (
            # Dynamo's same-GPU P/D variant: half the memory each, weights dropped after load.
            Placement(
                1,
                tuple(
                    WorkerPlacement(
                        role,
                        0,
                        (
                            "--mem-fraction-static",
                            "0.45",
                            *_SMALL_BATCH,
                            "--enable-memory-saver",
                            "--delete-ckpt-after-loading",
                        ),
                        vram_gib=6.5,
                        env=_UCX_COLOCATED,
                    )
                    for role in ("prefill", "decode")
                ),
                start_order=("prefill", "decode"),
                start_timeout_s=470,
            ),
            Placement(
                2,
                (WorkerPlacement("prefill", 0), WorkerPlacement("decode", 1)),
                start_timeout_s=470,
            ),
        )
    ),
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
    gpu=_alone("embedding", vram_gib=3.0, start_timeout_s=300),
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
    gpu=_alone("rerank", vram_gib=4.0, start_timeout_s=300),
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
    gpu=GpuProfile(
        (
            # The encoder waits for the PD worker's instance before it serves: PD first.
            Placement(
                1,
                (
                    WorkerPlacement("mm-encoder", 0, _SMALL_BATCH, vram_gib=4.0),
                    WorkerPlacement(
                        "mm-worker",
                        0,
                        (
                            *_SMALL_BATCH,
                            "--max-total-tokens",
                            "4096",
                            "--delete-ckpt-after-loading",
                        ),
                        vram_gib=7.0,
                    ),
                ),
                start_order=("mm-worker", "mm-encoder"),
            ),
            Placement(2, (WorkerPlacement("mm-encoder", 0), WorkerPlacement("mm-worker", 1))),
        )
    ),
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
    gpu=GpuProfile(
        (
            # Dynamo's single-GPU E/P/D: P, then D, then E, each serving before the next.
            Placement(
                1,
                (
                    WorkerPlacement("mm-encoder", 0, ("--max-running-requests", "2"), 4.0),
                    *(
                        WorkerPlacement(
                            role,
                            0,
                            (
                                "--max-running-requests",
                                "2",
                                "--context-length",
                                "2048",
                                "--max-total-tokens",
                                "1024",
                            ),
                            vram_gib=6.0,
                            env=_UCX_COLOCATED,
                        )
                        for role in ("mm-prefill", "mm-decode")
                    ),
                ),
                start_order=("mm-prefill", "mm-decode", "mm-encoder"),
            ),
            # Encoder and prefill share GPU 0 (the encoder loads only the vision tower).
            Placement(
                2,
                (
                    WorkerPlacement("mm-encoder", 0, ("--max-running-requests", "2"), 4.0),
                    WorkerPlacement("mm-prefill", 0, ("--max-total-tokens", "4096"), vram_gib=8.0),
                    WorkerPlacement("mm-decode", 1),
                ),
                start_order=("mm-prefill", "mm-decode", "mm-encoder"),
            ),
        )
    ),
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
    gpu=GpuProfile(
        (Placement(1, (WorkerPlacement("image-diffusion", 0, vram_gib=19.3),), (), 240),),
        nightly=True,
    ),
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
    gpu=GpuProfile(
        (Placement(1, (WorkerPlacement("video-generation", 0, vram_gib=17.6),), (), 420),),
        nightly=True,
    ),
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
