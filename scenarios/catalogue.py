"""Every dynamo.sglang topology the harness guards, with each worker's registration contract.

Adding a mode is adding an entry here: its workers (role, dynamo.sglang flags, model asset,
expected component), the model card each must register, the requests that prove it serves, and
its GPU profile (layouts on 1 and 2+ GPUs, caps for co-located workers, start order, timeouts).
Contracts are those of ai-dynamo 1.6.1 (see README, "Topologies"); GPU layouts and caps follow
Dynamo's own sglang GPU tests and launch scripts. Both tiers run the same flags: the CPU tier
runs each topology's packed 1-GPU layout.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.model.contract import (
    CHAT_COMPLETIONS,
    CHAT_IMAGES,
    EMBEDDING,
    EMPTY,
    RERANK,
    VIDEOS,
    ExpectedCard,
)
from harness.model.topology import (
    EVERY_SHAPE,
    GpuProfile,
    KnownViolation,
    Placement,
    Topology,
    WorkerPlacement,
    WorkerSpec,
)
from harness.model.violations import BAD_CONTENT, LISTED_EARLY
from scenarios import eras

# The GPU tier's model per asset key; defaults follow Dynamo's own sglang GPU tests and fit a
# 24 GiB runner. Each is overridable with `--model KEY=NAME_OR_PATH`.
GPU_MODELS: dict[str, str] = {
    "text": "Qwen/Qwen3-0.6B",
    "embedding": "Qwen/Qwen3-Embedding-0.6B",
    "rerank": "BAAI/bge-reranker-v2-m3",
    "vision-language": "Qwen/Qwen3-VL-2B-Instruct",
    "image": "Tongyi-MAI/Z-Image-Turbo",
    "video": "Wan-AI/Wan2.1-T2V-1.3B-Diffusers",
    # Dynamo's diffusion-LLM launch script's model.
    "diffusion-llm": "inclusionAI/LLaDA2.0-mini",
    # The LoRA adapter of Qwen3-0.6B that Dynamo's own LoRA test loads (tests/serve/
    # lora_utils.py DEFAULT_LORA_REPO; launch/lora/agg_lora.sh): loaded at runtime by
    # scenarios/test_runtime_registration.py on the GPU tier.
    "lora": "codelion/Qwen3-0.6B-accuracy-recovery-lora",
}
# What each default model's snapshot downloads (GiB; a whole repo, every file), shown by
# `models fetch --dry-run` when the Hub's metadata cannot be read: estimates from each repo's
# parameter count and file list, labelled as such.
GPU_MODEL_SIZES_GIB: dict[str, float] = {
    "Qwen/Qwen3-0.6B": 1.4,
    "Qwen/Qwen3-Embedding-0.6B": 1.1,
    "BAAI/bge-reranker-v2-m3": 4.3,
    "Qwen/Qwen3-VL-2B-Instruct": 4.0,
    "Tongyi-MAI/Z-Image-Turbo": 31.0,
    "Wan-AI/Wan2.1-T2V-1.3B-Diffusers": 27.0,
    "inclusionAI/LLaDA2.0-mini": 30.5,
    "codelion/Qwen3-0.6B-accuracy-recovery-lora": 0.1,
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
# No UCX settings: no upstream launch script sets UCX_TLS for co-located workers (Dynamo's
# disagg_same_gpu.sh and multimodal_disagg.sh --single-gpu run P and D on one GPU without it).
# Every page size as Dynamo's sglang launch scripts pass it.
_PAGE = ("--page-size", "16")
# Batch caps of Dynamo's single-GPU variants (examples/backends/sglang/launch/disagg_same_gpu.sh).
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


def _worker(
    role: str,
    component: str,
    model: str,
    card: ExpectedCard | None,
    *flags: str,
    path: str = "init_decode",
    **more: Any,
) -> WorkerSpec:
    """A worker: its role, component, model asset, contract, flags and start path."""
    return WorkerSpec(
        role=role,
        flags=flags,
        model=model,
        component=component,
        card=card,
        start_paths=(path,),
        **more,
    )


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
    path="init_multimodal_encode_worker",
)
_MM_REQUESTS = ("chat-image", "chat-image-stream")
# Each full-model worker of Dynamo's single-GPU multimodal P/D (multimodal_disagg.sh
# --single-gpu): a high static fraction whose pool the absolute KV cap bounds.
_MM_SINGLE_GPU = (
    "--mem-fraction-static",
    "0.9",
    "--delete-ckpt-after-loading",
    "--max-running-requests",
    "2",
    "--context-length",
    "2048",
    "--max-total-tokens",
    "1024",
)
_TEXT_REQUESTS = ("chat", "chat-stream", "completion")

AGGREGATED = Topology(
    name="aggregated",
    eras=eras.AGGREGATED_ERAS,
    workers=(
        _worker(
            "worker", "backend", "text", ExpectedCard(CHAT_COMPLETIONS, "Tokens", "aggregated")
        ),
    ),
    requests=_TEXT_REQUESTS,
    gpu=_alone("worker", vram_gib=3.7),
    shapes=EVERY_SHAPE,  # every chat and completion shape: the plain path
)

DISAGGREGATED = Topology(
    name="disaggregated",
    eras=eras.DISAGGREGATED_ERAS,
    workers=(
        _worker(
            "prefill",
            "prefill",
            "text",
            ExpectedCard("Prefill", "Tokens", "prefill", (("decode",),), public=False),
            "--disaggregation-mode",
            "prefill",
            *_NIXL,
            path="init_prefill",
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
            # Dynamo's same-GPU P/D (disagg_same_gpu.sh): 0.45 of the free memory each, page
            # size 16, weights dropped after load; the KV cap its test requests (37472 tokens,
            # tests/serve/test_sglang.py "disaggregated_same_gpu", profiled 13 GiB in all).
            Placement(
                1,
                tuple(
                    WorkerPlacement(
                        role,
                        0,
                        (
                            *_PAGE,
                            "--mem-fraction-static",
                            "0.45",
                            *_SMALL_BATCH,
                            "--enable-memory-saver",
                            "--delete-ckpt-after-loading",
                            "--max-total-tokens",
                            "37472",
                        ),
                        vram_gib=6.5,
                    )
                    for role in ("prefill", "decode")
                ),
                start_order=("prefill", "decode"),
                start_timeout_s=470,
            ),
            Placement(
                2,
                (
                    WorkerPlacement("prefill", 0, _PAGE, vram_gib=3.7),
                    WorkerPlacement("decode", 1, _PAGE, vram_gib=3.7),
                ),
                start_timeout_s=470,
            ),
        )
    ),
)

EMBEDDING_TOPOLOGY = Topology(
    name="embedding",
    eras=eras.EMBEDDING_ERAS,
    workers=(
        _worker(
            "embedding",
            "backend",
            "embedding",
            ExpectedCard(EMBEDDING, "Text", "aggregated"),
            "--embedding-worker",
            path="init_embedding",
        ),
    ),
    requests=("embedding",),
    gpu=_alone("embedding", vram_gib=3.0, start_timeout_s=300),
    shapes=EVERY_SHAPE,
)

RERANK_TOPOLOGY = Topology(
    name="rerank",
    eras=eras.RERANK_ERAS,
    workers=(
        _worker(
            "rerank",
            "rerank",
            "rerank",
            ExpectedCard(RERANK, "Text", "aggregated"),
            "--rerank-worker",
            path="init_rerank",
        ),
    ),
    requests=("rerank",),
    gpu=_alone("rerank", vram_gib=4.0, start_timeout_s=300),
    shapes=EVERY_SHAPE,
)

MM_ENCODE_PD = Topology(
    name="mm-encode-pd",
    eras=eras.MM_ENCODE_PD_ERAS,
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
            path="init_multimodal_worker",
        ),
    ),
    requests=_MM_REQUESTS,
    shapes=EVERY_SHAPE,  # the image URL through the encode worker (sglang's MMEncoder loads it)
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
            Placement(
                2,
                (
                    WorkerPlacement("mm-encoder", 0, vram_gib=4.0),
                    WorkerPlacement("mm-worker", 1, vram_gib=7.0),
                ),
            ),
        )
    ),
)

MM_ENCODE_P_D = Topology(
    name="mm-encode-p-d",
    eras=eras.MM_ENCODE_P_D_ERAS,
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
            path="init_multimodal_prefill_worker",
        ),
        _worker(
            "mm-decode",
            "backend",
            "vision-language",
            ExpectedCard(EMPTY, "Tokens", "decode", (("prefill",),), public=False),
            *_DEDICATED,
            "--disaggregation-mode",
            "decode",
            path="init_multimodal_worker",
        ),
    ),
    requests=_MM_REQUESTS,
    marks=("multimodal",),
    gpu=GpuProfile(
        (
            # Dynamo's single-GPU E/P/D (multimodal_disagg.sh --single-gpu; its test profiled
            # 16.1 GiB): P, then D, then E, each serving before the next.
            Placement(
                1,
                (
                    WorkerPlacement("mm-encoder", 0, ("--max-running-requests", "2"), 4.0),
                    *(
                        WorkerPlacement(role, 0, (*_PAGE, *_MM_SINGLE_GPU), vram_gib=6.0)
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
                    WorkerPlacement(
                        "mm-prefill", 0, (*_PAGE, "--max-total-tokens", "4096"), vram_gib=8.0
                    ),
                    WorkerPlacement("mm-decode", 1, _PAGE, vram_gib=6.0),
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
        KnownViolation(
            BAD_CONTENT,
            ("1.6.1",),
            "Dynamo 1.6.1's GET /v1/models reports the context length of whichever of the "
            "model's cards its map of display name to context length keeps (lib/llm/src/http/"
            "service/openai.rs, list_models_openai): here the encoder's 4096 or the P/D "
            "workers' --context-length 2048, varying from run to run (measured: 2048 twice, "
            "4096 twice); the model serves 2048 at most",
            shape="listing[default]",
        ),
    ),
)

IMAGE_DIFFUSION = Topology(
    name="image-diffusion",
    eras=eras.DIFFUSION_ERAS,
    workers=(
        _worker(
            "image-diffusion",
            "backend",
            "image",
            ExpectedCard(CHAT_IMAGES, "Text", "aggregated"),
            "--image-diffusion-worker",
            path="init_image_diffusion",
        ),
    ),
    requests=("image",),
    shapes=EVERY_SHAPE,
    gpu=GpuProfile(
        (Placement(1, (WorkerPlacement("image-diffusion", 0, vram_gib=19.3),), (), 240),),
        nightly=True,
    ),
    known_violations=(
        KnownViolation(
            BAD_CONTENT,
            ("1.6.1",),
            "Dynamo 1.6.1's image diffusion handler never reads `n`: it only logs whether the "
            "request has one, asks DiffGenerator.generate for no output count and keeps the "
            "first result of a list, so n=2 is answered with one image on any engine "
            "(dynamo/sglang/request_handlers/image_diffusion/image_diffusion_handler.py, "
            "generate and _generate_images)",
            shape="image[n-2]",
        ),
    ),
)

VIDEO_GENERATION = Topology(
    name="video-generation",
    eras=eras.VIDEO_ERAS,
    workers=(
        _worker(
            "video-generation",
            "backend",
            "video",
            ExpectedCard(VIDEOS, "Text", "aggregated"),
            "--video-generation-worker",
            path="init_video_diffusion",
        ),
    ),
    requests=("video",),
    gpu=GpuProfile(
        (Placement(1, (WorkerPlacement("video-generation", 0, vram_gib=17.6),), (), 420),),
        nightly=True,
    ),
)

# -- start paths beyond the first eight (dynamo.sglang 1.6.1) --------------------------------

_MM_NATIVE_WORKERS = (
    # sglang's own multimodal processing inside one aggregated worker: no encoder.
    _worker(
        "mm-agg",
        "backend",
        "vision-language",
        ExpectedCard(CHAT_COMPLETIONS, "Tokens", "aggregated"),
        "--enable-multimodal",
        "--chat-template",
        "qwen2-vl",
    ),
)
MM_NATIVE = Topology(
    name="mm-native",
    eras=eras.mm_native_eras(_MM_NATIVE_WORKERS),
    workers=_MM_NATIVE_WORKERS,
    requests=(*_MM_REQUESTS, "chat"),
    shapes=EVERY_SHAPE,  # the image URL through sglang's own multimodal processing
    marks=("multimodal",),
    gpu=_alone("mm-agg", vram_gib=9.0),
)

MM_NATIVE_P_D = Topology(
    name="mm-native-p-d",
    eras=eras.MM_NATIVE_P_D_ERAS,
    workers=(
        _worker(
            "mm-prefill",
            "prefill",
            "vision-language",
            ExpectedCard("Prefill", "Tokens", "prefill", (("decode",),), public=False),
            "--enable-multimodal",
            "--chat-template",
            "qwen2-vl",
            "--disaggregation-mode",
            "prefill",
            *_NIXL,
            path="init_prefill",
        ),
        _worker(
            "mm-decode",
            "backend",
            "vision-language",
            ExpectedCard(CHAT_COMPLETIONS, "Tokens", "decode", (("prefill",),)),
            "--enable-multimodal",
            "--chat-template",
            "qwen2-vl",
            "--disaggregation-mode",
            "decode",
            *_NIXL,
        ),
    ),
    requests=_MM_REQUESTS,
    marks=("multimodal",),
    gpu=GpuProfile(
        (
            # The caps of Dynamo's single-GPU multimodal P/D (multimodal_disagg.sh
            # --single-gpu): absolute KV and context caps. Fractions alone do not share a GPU
            # in sglang 0.5.21 (each applies to the memory free when its worker starts: 0.4
            # and 0.4 left the decode worker ~0.3 GiB of KV cache).
            Placement(
                1,
                tuple(
                    WorkerPlacement(role, 0, (*_PAGE, *_MM_SINGLE_GPU), vram_gib=8.0)
                    for role in ("mm-prefill", "mm-decode")
                ),
                start_order=("mm-prefill", "mm-decode"),
                start_timeout_s=470,
            ),
            Placement(
                2,
                (
                    WorkerPlacement("mm-prefill", 0, _PAGE, vram_gib=8.0),
                    WorkerPlacement("mm-decode", 1, _PAGE, vram_gib=8.0),
                ),
                start_timeout_s=470,
            ),
        )
    ),
)

# Two nodes of one engine (tensor parallel across them): only the rank-0 leader registers;
# the follower runs its schedulers and metrics and must publish nothing routable.
_MULTINODE = ("--tp", "2", "--nnodes", "2", "--dist-init-addr", "127.0.0.1:{port:dist_init}")
_MULTINODE_WORKERS = (
    _worker(
        "leader",
        "backend",
        "text",
        ExpectedCard(CHAT_COMPLETIONS, "Tokens", "aggregated"),
        *_MULTINODE,
        "--node-rank",
        "0",
    ),
    _worker(
        "follower",
        "backend",
        "text",
        None,
        *_MULTINODE,
        "--node-rank",
        "1",
        path="init_decode/non_leader",
        stays_out_log=r"Non-leader node detected",
    ),
)
MULTINODE = Topology(
    name="multinode",
    eras=eras.multinode_eras(_MULTINODE_WORKERS),
    workers=_MULTINODE_WORKERS,
    requests=_TEXT_REQUESTS,
    gpu=GpuProfile(
        (
            # One GPU per node on one host: sglang's custom all-reduce check fails there and
            # falls back to NCCL (parallel_state.py); say so up front instead.
            Placement(
                2,
                tuple(
                    WorkerPlacement(role, gpu, ("--disable-custom-all-reduce",), vram_gib=3.7)
                    for gpu, role in enumerate(("leader", "follower"))
                ),
                start_timeout_s=470,
            ),
        ),
        no_single_gpu="each node of the tensor-parallel group runs on a GPU of its own",
    ),
)

# The multi-process gateway: the leader keeps the engine and spawns N `python -m
# dynamo.sglang` children, each serving through its own tokenizer worker and registering.
GATEWAY_WORKERS = 2
GATEWAY = Topology(
    name="gateway",
    eras=eras.GATEWAY_ERAS,
    workers=(
        WorkerSpec(
            role="gateway",
            flags=("--gateway-workers", str(GATEWAY_WORKERS)),
            model="text",
            component="backend",
            card=ExpectedCard(
                CHAT_COMPLETIONS,
                "Tokens",
                "aggregated",
                runtime_keys=("dynamo.sglang.gateway_engine", "dynamo.sglang.gateway_workers"),
            ),
            start_paths=("init_decode/gateway_leader", "gateway_child"),
            registrants=GATEWAY_WORKERS,
            # The children inherit the leader's environment: a pinned request-plane port
            # would be shared (measured on 1.6.1: the second child publishes its card, then
            # fails to bind with "Address already in use", leaving a card without instance).
            pin_request_plane=False,
        ),
    ),
    requests=_TEXT_REQUESTS,
    gpu=_alone("gateway", vram_gib=3.9),
    # The children are fresh interpreters (the template cannot fork them): ~20-25 s on 2
    # cores, so the CPU tier runs it with -m nightly (and CI runs it on every change).
    cpu_nightly=True,
    cpu_register_deadline_s=120.0,
    timeout_s=240,
)

_LLM_DIFFUSION_WORKERS = (
    _worker(
        "diffusion-llm",
        "backend",
        "diffusion-llm",
        ExpectedCard(CHAT_COMPLETIONS, "Tokens", "aggregated"),
        "--dllm-algorithm",
        "LowConfidence",
        "--trust-remote-code",
        path="init_llm_diffusion",
    ),
)
LLM_DIFFUSION = Topology(
    name="llm-diffusion",
    eras=eras.llm_diffusion_eras(_LLM_DIFFUSION_WORKERS),
    workers=_LLM_DIFFUSION_WORKERS,
    requests=("chat", "completion"),
    # LLaDA2.0-mini is a 16B mixture of experts. Dynamo's test (tests/serve/test_sglang.py
    # "diffusion_llada") passes --mem-fraction-static 0.7 ("0.4 OOMs the sglang scheduler")
    # and marks it h100, profiled at 56 GiB: no 24 GiB runner holds it.
    gpu=GpuProfile(
        (
            Placement(
                1,
                (
                    WorkerPlacement(
                        "diffusion-llm", 0, ("--mem-fraction-static", "0.7"), vram_gib=56.0
                    ),
                ),
                (),
                600,
            ),
        ),
        nightly=True,
    ),
)

# LoRA adapters registered at runtime, on both roles of a P/D pair: each load publishes a
# LoRA card on its worker (a prefill worker's must stay Prefill, never Chat: Dynamo PR
# #8945), each unload removes it. See scenarios/test_runtime_registration.py.
_LORA_FLAGS = (
    "--enable-lora",
    # Dynamo's agg_lora.sh: rank up to 64 (the adapter its test loads, GPU_MODELS["lora"]).
    "--max-lora-rank",
    "64",
    "--lora-target-modules",
    "all",
    "--max-loras-per-batch",
    "2",
)
_LORA_ENV = (("DYN_LORA_ENABLED", "true"),)
LORA_P_D = Topology(
    name="lora-p-d",
    eras=eras.LORA_P_D_ERAS,
    workers=tuple(
        dataclasses.replace(w, flags=(*w.flags, *_LORA_FLAGS), env=_LORA_ENV)
        for w in DISAGGREGATED.workers
    ),
    requests=("chat",),
    gpu=DISAGGREGATED.gpu,
    assets=("lora",),
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
    MM_NATIVE,
    MM_NATIVE_P_D,
    MULTINODE,
    GATEWAY,
    LLM_DIFFUSION,
    LORA_P_D,
)

# Start paths of dynamo.sglang 1.6.1 that no topology takes, each with why (see
# harness.judge.coverage: a start path neither covered nor listed here fails the guard).
START_PATH_EXEMPTIONS: dict[str, str] = {
    "snapshot_restore": (
        "snapshot mode (DYN snapshot control dir set): the engine is created before the "
        "runtime, checkpointed with CRIU by an external agent and restored; neither the "
        "agent nor a GPU checkpoint exists on the CPU tier, and no catalogue GPU runner "
        "runs one"
    ),
    "failover_standby": (
        "a restored snapshot engine paused as a failover standby (FAILOVER_LOCK_PATH): it "
        "needs snapshot mode and Dynamo's gpu_memory_service flock, which is not "
        "installable from PyPI"
    ),
    "init_prefill/non_leader": (
        "the same handle_non_leader_node as init_decode/non_leader (covered by multinode), "
        "reached from the prefill worker"
    ),
    "init_prefill/gateway_leader": (
        "the same serve_via_gateway_children as init_decode/gateway_leader (covered by "
        "gateway), reached from a prefill worker"
    ),
    "init_llm_diffusion/non_leader": (
        "the same handle_non_leader_node as init_decode/non_leader (covered by multinode), "
        "reached from the diffusion LLM worker"
    ),
}


def by_name(name: str) -> Topology:
    return next(t for t in CATALOGUE if t.name == name)
