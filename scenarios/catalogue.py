"""Every dynamo.sglang topology the harness guards, with each worker's registration contract.

Adding a mode is adding an entry here: its workers (role, dynamo.sglang flags, model asset,
expected component), the model card each must register, the requests that prove it serves, and
its GPU profile (layouts on 1 and 2+ GPUs, caps for co-located workers, start order, timeouts).
Contracts are those of ai-dynamo 1.6.1 (generated as docs/topologies.md; notes in
docs/modes.md); GPU layouts and caps follow Dynamo's own sglang GPU tests and launch scripts.
Both tiers run the same flags: the CPU tier runs each topology's packed 1-GPU layout.
"""

from __future__ import annotations

import dataclasses

from discovery_harness.model.contract import (
    CHAT_COMPLETIONS,
    CHAT_IMAGES,
    EMBEDDING,
    EMPTY,
    RERANK,
    VIDEOS,
    ExpectedCard,
)
from discovery_harness.model.events import LISTED, LORA_LISTED, relisted_after_restart
from discovery_harness.model.topology import (
    EVERY_SHAPE,
    GpuProfile,
    KnownViolation,
    KnownWindow,
    Placement,
    Topology,
    WorkerPlacement,
    WorkerSpec,
)
from discovery_harness.model.violations import (
    BAD_CONTENT,
    BAD_INPUT_ANSWER,
    BAD_RESPONSE,
    CANARY_REJECTED,
    LISTED_EARLY,
    LORA_WITHOUT_RUNTIME_DATA,
    NEVER_LISTED,
    NEVER_READY,
    READY_BEFORE_CARD,
    STATUS_503,
    UNREADY_AFTER_READY,
    WRONG_CARD,
    lora_shape,
)
from discovery_harness_scenarios import eras

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
    # the lora-p-d verdict (test_registers_and_serves) on the GPU tier.
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
        placements=(
            Placement(
                gpus=1,
                workers=(WorkerPlacement(role=role, gpu=0, vram_gib=vram_gib),),
                start_timeout_s=start_timeout_s,
            ),
        )
    )


_ENCODER_CARD = ExpectedCard(
    model_type=CHAT_COMPLETIONS,
    model_input="Tokens",
    worker_type="encode",
    needs=(("prefill", "decode"), ("aggregated",)),
)
_MM_ENCODER = WorkerSpec(
    role="mm-encoder",
    component="encode",
    model="vision-language",
    card=_ENCODER_CARD,
    flags=(*MULTIMODAL_FLAGS, "--disaggregation-mode", "encode"),
    start_paths=("init_multimodal_encode_worker",),
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

# Finding 33: before 1.0 the LLM and embedding workers serve their generate endpoint and
# register the card concurrently (one gather): the frontend lists the model on the card, which
# can come a moment before the instance serves (seen on 0.7.1 aggregated and on 0.8.0
# disaggregated's decode, 2 of 3 runs, on a loaded machine; 0.8.1 and 0.9.1 run the same code).
CARD_BEFORE_INSTANCE = KnownViolation(
    kind=LISTED_EARLY,
    dynamo_versions=("0.7.0", "0.7.1", "0.8.0", "0.8.1", "0.9.1"),
    reason="Dynamo before 1.0 starts a worker's generate endpoint and its registration "
    "concurrently (asyncio.gather of serve_endpoint and register_llm_with_readiness_gate): the "
    "card can be in etcd, and the model listed, a moment before the instance serves (finding 33)",
    cites=(
        "dynamo/sglang/main.py (0.7.1: init lines 158-175, init_embedding's gather; 0.8.0-0.9.1: "
        "init lines 177-190)",
    ),
)

AGGREGATED = Topology(
    name="aggregated",
    known_violations=(CARD_BEFORE_INSTANCE,),
    eras=eras.AGGREGATED_ERAS,
    workers=(
        WorkerSpec(
            role="worker",
            component="backend",
            model="text",
            card=ExpectedCard(
                model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="aggregated"
            ),
        ),
    ),
    requests=_TEXT_REQUESTS,
    gpu=_alone("worker", vram_gib=3.7),
    shapes=EVERY_SHAPE,  # every chat and completion shape: the plain path
)

# Finding 8 (docs/findings.md): after a prefill worker restarts, 1.6.1 lists the model again
# when the prefill group is committed and activates the prefill route just after, in the
# background; a request in between gets 503. Intermittent: excused only in the window after the
# listing.
PREFILL_RESTART_503 = KnownViolation(
    kind=STATUS_503,
    dynamo_versions=("1.6.1",),
    reason="after the prefill worker restarts, the model is listed again ('Committed "
    "discovered model group') before the frontend's 'Prefill router target activated'; a "
    "request in between gets 503 (measured: 1 of 2 clean CI runs, one of the five requests "
    "after the listing; 0 of 30 restarts here, quiet or beside two busy processes, where the "
    "activation follows the commit by ~2 ms)",
    window=KnownWindow(after=relisted_after_restart("prefill"), seconds=2.0),
    cites=(
        "ai-dynamo/dynamo#14606 (open: a hop still activating is reported available)",
        "ai-dynamo/dynamo#10740 (prefill router lifecycle Pending / Active / Unavailable)",
    ),
)

# Finding 6: before 1.3 the frontend lists a P/D model on the prefill card alone (1.0-1.2) and
# answers 404 until decode's card comes; a race the operator's readiness settings widen
# (measured with them on 1.1.1 and 1.2.1: disaggregated in both, lora-p-d on 1.1.1).
PAIR_LISTED_EARLY = KnownViolation(
    kind=LISTED_EARLY,
    dynamo_versions=("1.0.2", "1.1.1", "1.2.1"),
    reason="Dynamo before 1.3 lists a prefill/decode model as soon as the prefill card exists "
    "and answers 404 'Model not found' until the decode worker registers (finding 6; 1.3's "
    "topology readiness, PR #9815, lists a namespace only once every need is met)",
    cites=("ai-dynamo/dynamo#9815 (cards carry worker_type / needs: the fix, from 1.3)",),
)

# Finding 32: before 1.3 the frontend lists a P/D model once its cards are in etcd, before its
# own router reaches both halves: the first request may fail (seen right after the listing).
PAIR_UNROUTABLE_WHEN_LISTED = KnownViolation(
    kind=BAD_RESPONSE,
    dynamo_versions=("1.0.2", "1.1.1", "1.2.1"),
    reason="Dynamo before 1.3 lists a prefill/decode model as soon as its cards are in etcd, "
    "before its own router has the other half's instances: a request right after the listing "
    "answers 500 'failed to route to prefill worker: no instances found' (finding 32; seen on "
    "1.0.2 and 1.2.1; 1.3's topology readiness lists a namespace only once the frontend can "
    "serve it)",
    window=KnownWindow(after=LISTED, seconds=2.0),
    cites=("ai-dynamo/dynamo#9815 (topology readiness: the fix, from 1.3)",),
)

# Finding 35: 0.8's frontend can list a P/D model before one half registered and then not
# route to that half for the whole listing deadline (seen 1 of 3 runs on 0.8.0 and on 0.8.1).
PAIR_UNROUTED_AFTER_EARLY_LISTING = KnownViolation(
    kind=BAD_RESPONSE,
    dynamo_versions=("0.8.0", "0.8.1"),
    reason="Dynamo 0.8's frontend lists a prefill/decode model on one half's card and, when "
    "the other half registers a moment later, may not route to it for seconds: 500 'no "
    "instances found for endpoint …/backend/generate' (0.8.0, decode registered 0.4 s after "
    "the listing) or the decode handler's 'bootstrap_info is required' (0.8.1, prefill 0.65 s "
    "after: requests went to decode without the prefill hop) for the 10 s listing deadline "
    "(finding 35; 1 of 3 runs each, loaded machine)",
    window=KnownWindow(after=LISTED, seconds=12.0),
    cites=(
        "dynamo/sglang/request_handlers/llm/decode_handler.py (0.8.1: lines 107-112, "
        "bootstrap_info expected from the frontend)",
        "ai-dynamo/dynamo#9815 (topology readiness, from 1.3: listed only once needs are met)",
    ),
)

DISAGGREGATED = Topology(
    name="disaggregated",
    eras=eras.DISAGGREGATED_ERAS,
    known_violations=(
        PREFILL_RESTART_503,
        PAIR_LISTED_EARLY,
        PAIR_UNROUTABLE_WHEN_LISTED,
        PAIR_UNROUTED_AFTER_EARLY_LISTING,
        CARD_BEFORE_INSTANCE,
    ),
    workers=(
        WorkerSpec(
            role="prefill",
            component="prefill",
            model="text",
            card=ExpectedCard(
                model_type="Prefill",
                model_input="Tokens",
                worker_type="prefill",
                needs=(("decode",),),
                public=False,
            ),
            flags=("--disaggregation-mode", "prefill", *_NIXL),
            start_paths=("init_prefill",),
        ),
        WorkerSpec(
            role="decode",
            component="backend",
            model="text",
            card=ExpectedCard(
                model_type=CHAT_COMPLETIONS,
                model_input="Tokens",
                worker_type="decode",
                needs=(("prefill",),),
            ),
            flags=("--disaggregation-mode", "decode", *_NIXL),
        ),
    ),
    requests=_TEXT_REQUESTS,
    gpu=GpuProfile(
        placements=(
            # Dynamo's same-GPU P/D (disagg_same_gpu.sh): 0.45 of the free memory each, page
            # size 16, weights dropped after load; the KV cap its test requests (37472 tokens,
            # tests/serve/test_sglang.py "disaggregated_same_gpu", profiled 13 GiB in all).
            Placement(
                gpus=1,
                workers=tuple(
                    WorkerPlacement(
                        role=role,
                        gpu=0,
                        flags=(
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
                gpus=2,
                workers=(
                    WorkerPlacement(role="prefill", gpu=0, flags=_PAGE, vram_gib=3.7),
                    WorkerPlacement(role="decode", gpu=1, flags=_PAGE, vram_gib=3.7),
                ),
                start_timeout_s=470,
            ),
        )
    ),
)

# Finding 20: before 1.6 the embedding worker's canary is the LLM's (upstream #14680, found by
# running each release with the operator's readiness settings): its handler refuses every one,
# and with the endpoint list set the worker turns not ready a second after it said ready.
_EMBEDDING_CANARY_RELEASES = ("1.0.2", "1.1.1", "1.2.1", "1.3.1", "1.4.2", "1.5.1")  # measured
_EMBEDDING_CANARY_REASON = (
    "Dynamo before 1.6 hands the embedding worker's serve_endpoint the generate-shaped "
    "SglangHealthCheckPayload (token_ids, stop_conditions, ...), which the embedding handler's "
    "EmbeddingRequest refuses ('model', 'input': Field required): every canary fails"
)
_EMBEDDING_CANARY_CITES = (
    "dynamo/sglang/init_embedding.py (1.5.1: lines 72-84; 1.1.1 and 1.0.2: line 44)",
    "ai-dynamo/dynamo#14680 (embedding workers stay unready: the canary shaped for generate)",
)
EMBEDDING_CANARY_GENERATE_SHAPED = (
    KnownViolation(
        kind=CANARY_REJECTED,
        dynamo_versions=_EMBEDDING_CANARY_RELEASES,
        reason=_EMBEDDING_CANARY_REASON,
        cites=_EMBEDDING_CANARY_CITES,
    ),
    KnownViolation(
        kind=UNREADY_AFTER_READY,
        dynamo_versions=_EMBEDDING_CANARY_RELEASES,
        reason=_EMBEDDING_CANARY_REASON + ", so the runtime marks generate not ready and "
        "/health answers 503 after each idle second",
        cites=_EMBEDDING_CANARY_CITES,
    ),
)

# Measured on every release before 1.3 (finding 30; 0.7.0-0.8.1 added 2026-12-07).
_EMBEDDING_OPTIONS_IGNORED = (
    "0.7.0",
    "0.7.1",
    "0.8.0",
    "0.8.1",
    "0.9.1",
    "1.0.2",
    "1.1.1",
    "1.2.1",
)

EMBEDDING_TOPOLOGY = Topology(
    name="embedding",
    eras=eras.EMBEDDING_ERAS,
    workers=(
        WorkerSpec(
            role="embedding",
            component="backend",
            model="embedding",
            card=ExpectedCard(model_type=EMBEDDING, model_input="Text", worker_type="aggregated"),
            flags=("--embedding-worker",),
            start_paths=("init_embedding",),
        ),
    ),
    requests=("embedding",),
    gpu=_alone("embedding", vram_gib=3.0, start_timeout_s=300),
    shapes=EVERY_SHAPE,
    known_violations=(
        *EMBEDDING_CANARY_GENERATE_SHAPED,
        CARD_BEFORE_INSTANCE,
        *(
            KnownViolation(
                kind=BAD_CONTENT,
                dynamo_versions=_EMBEDDING_OPTIONS_IGNORED,
                reason="Dynamo before 1.3's embedding handler passes only the input to the "
                "engine: `encoding_format` and `dimensions` are dropped and every answer is "
                "the full-length float list (finding 30; 1.3 reads both)",
                shape=shape,
                cites=(
                    "dynamo/sglang/request_handlers/embedding/embedding_handler.py (0.7.0, "
                    "0.8.1: generate lines 32-57; 1.1.1: "
                    "generate lines 35-70, _transform_response lines 72-99; 1.3.1 adds "
                    "dimensions and encoding_format, lines 95-118)",
                ),
            )
            for shape in ("embedding[base64]", "embedding[dimensions]")
        ),
    ),
)

RERANK_TOPOLOGY = Topology(
    name="rerank",
    eras=eras.RERANK_ERAS,
    workers=(
        WorkerSpec(
            role="rerank",
            component="rerank",
            model="rerank",
            card=ExpectedCard(model_type=RERANK, model_input="Text", worker_type="aggregated"),
            flags=("--rerank-worker",),
            start_paths=("init_rerank",),
        ),
    ),
    requests=("rerank",),
    gpu=_alone("rerank", vram_gib=4.0, start_timeout_s=300),
    shapes=EVERY_SHAPE,
)

# Finding 17: the encoder's generate endpoint carries no health-check payload, so /health says
# ready as soon as it serves, while its registration runs beside it as a task: ready before its
# card by the milliseconds registration takes (seen once in a few runs with a 50 ms poll).
ENCODER_READY_BEFORE_CARD = KnownViolation(
    kind=READY_BEFORE_CARD,
    dynamo_versions=("1.5.1", "1.6.1"),  # 1.5.1: the same gather (init_multimodal.py 84-100)
    reason="Dynamo 1.5.1 and 1.6.1's multimodal encoder serves its generate endpoint (no "
    "health-check payload: ready on /health at once) concurrently with register_encoder, whose "
    "set_health_status(True) after registration (the #15069 fix) no longer decides /health: "
    "the encoder can say ready a few ms before its card is in etcd",
    cites=(
        "dynamo/sglang/init_multimodal.py (1.6.1: init_multimodal_encode_worker, "
        "register_encoder lines 83-106, serve_endpoint lines 110-119)",
        "ai-dynamo/dynamo#15069 (the SGLang encode worker healthy before registration)",
    ),
)

# Finding 21: before 1.5 the encoder never says ready with the canary on: its generate endpoint
# has no health-check payload, and those releases start every endpoint not ready and let only
# a canary or a request's success mark it (upstream #8592, fixed by 1.5.1).
ENCODER_NEVER_READY = KnownViolation(
    kind=NEVER_READY,
    dynamo_versions=("1.2.1", "1.3.1", "1.4.2"),  # 1.1.1 sets Ready eagerly (measured)
    reason="Dynamo before 1.5, with the canary on, keeps an endpoint without a health-check "
    "payload not ready: the multimodal encoder serves (its requests succeed) while its /health "
    "answers 503 for its whole life",
    cites=(
        "dynamo/sglang/init_multimodal.py (1.3.1: init_multimodal_encode_worker, "
        "serve_endpoint at line 83 without health_check_payload)",
        "ai-dynamo/dynamo#8592 (an endpoint without payload stays NotReady with the canary on)",
    ),
)

# Finding 15: the multimodal PD, prefill and decode workers of 1.6.1 hand the runtime the LLM
# canaries (flat token ids), which their handlers' request models refuse; the handlers answer
# the error as a response, so the runtime logs a success and the workers stay ready.
MM_CANARY_REJECTED = KnownViolation(
    kind=CANARY_REJECTED,
    # 1.3.1-1.5.1: the same payloads (1.5.1: init_multimodal.py lines 163-165 and 230);
    # 1.0.2-1.2.1: measured the same refusal ("request: Field required").
    dynamo_versions=("1.0.2", "1.1.1", "1.2.1", "1.3.1", "1.4.2", "1.5.1", "1.6.1"),
    reason="Dynamo 1.3.1 to 1.6.1's multimodal workers send the LLM health-check payloads "
    "(SglangHealthCheckPayload, SglangDisaggHealthCheckPayload, SglangPrefillHealthCheckPayload: "
    "flat token_ids) to handlers that validate a wrapped SglangMultimodalRequest / "
    "DisaggSglangMultimodalRequest ('request: Field required'), and the handlers answer the "
    "error as a response: every canary fails, and the runtime counts it a success",
    cites=(
        "dynamo/sglang/init_multimodal.py (1.6.1: init_multimodal_worker lines 178-181, "
        "init_multimodal_prefill_worker line 246)",
        "dynamo/sglang/request_handlers/multimodal/worker_handler.py (1.6.1: generate "
        "lines 552-579 and 833-936)",
        "ai-dynamo/dynamo#14680 (the same class: the embedding canary shaped for generate)",
    ),
)

# Finding 31: before 1.1 the public multimodal processor writes the chat answers itself.
PROCESSOR_OWN_CHUNKS = tuple(
    KnownViolation(
        kind=BAD_CONTENT,
        dynamo_versions=("0.9.1", "1.0.2"),  # measured (0.7-0.8: their mm-encode never serves)
        reason="Dynamo before 1.1's multimodal processor builds each chat chunk itself: "
        "`model` is the model's path (not the served name), and the final chunk carries usage "
        "with prompt_tokens 0, asked for or not (finding 31)",
        shape=shape,
        cites=(
            "dynamo/sglang/request_handlers/multimodal/processor_handler.py (1.0.2: "
            "self.model = server_args.model_path, line 44; the chunk, lines 177-195)",
        ),
    )
    for shape in ("chat-image[default]", "chat-image[image-url]", "chat-image-stream[default]")
)

MM_ENCODE_PD = Topology(
    name="mm-encode-pd",
    eras=eras.MM_ENCODE_PD_ERAS,
    workers=(
        _MM_ENCODER,
        WorkerSpec(
            role="mm-worker",
            component="backend",
            model="vision-language",
            card=ExpectedCard(
                model_type=EMPTY,
                model_input="Tokens",
                worker_type="aggregated",
                needs=(("encode",),),
                public=False,
            ),
            flags=(*_DEDICATED, "--disaggregation-mode", "pd"),
            start_paths=("init_multimodal_worker",),
        ),
    ),
    requests=_MM_REQUESTS,
    shapes=EVERY_SHAPE,  # the image URL through the encode worker (sglang's MMEncoder loads it)
    marks=("multimodal",),
    gpu=GpuProfile(
        placements=(
            # The encoder waits for the PD worker's instance before it serves: PD first.
            Placement(
                gpus=1,
                workers=(
                    WorkerPlacement(role="mm-encoder", gpu=0, flags=_SMALL_BATCH, vram_gib=4.0),
                    WorkerPlacement(
                        role="mm-worker",
                        gpu=0,
                        flags=(
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
                gpus=2,
                workers=(
                    WorkerPlacement(role="mm-encoder", gpu=0, vram_gib=4.0),
                    WorkerPlacement(role="mm-worker", gpu=1, vram_gib=7.0),
                ),
            ),
        )
    ),
    known_violations=(
        MM_CANARY_REJECTED,
        ENCODER_READY_BEFORE_CARD,
        ENCODER_NEVER_READY,
        *PROCESSOR_OWN_CHUNKS,
    ),
)

MM_ENCODE_P_D = Topology(
    name="mm-encode-p-d",
    eras=eras.MM_ENCODE_P_D_ERAS,
    workers=(
        _MM_ENCODER,
        WorkerSpec(
            role="mm-prefill",
            component="prefill",
            model="vision-language",
            card=ExpectedCard(
                model_type=EMPTY,
                model_input="Tokens",
                worker_type="prefill",
                needs=(("decode",),),
                public=False,
            ),
            flags=(*_DEDICATED, "--disaggregation-mode", "prefill"),
            start_paths=("init_multimodal_prefill_worker",),
        ),
        WorkerSpec(
            role="mm-decode",
            component="backend",
            model="vision-language",
            card=ExpectedCard(
                model_type=EMPTY,
                model_input="Tokens",
                worker_type="decode",
                needs=(("prefill",),),
                public=False,
            ),
            flags=(*_DEDICATED, "--disaggregation-mode", "decode"),
            start_paths=("init_multimodal_worker",),
        ),
    ),
    requests=_MM_REQUESTS,
    marks=("multimodal",),
    gpu=GpuProfile(
        placements=(
            # Dynamo's single-GPU E/P/D (multimodal_disagg.sh --single-gpu; its test profiled
            # 16.1 GiB): P, then D, then E, each serving before the next.
            Placement(
                gpus=1,
                workers=(
                    WorkerPlacement(
                        role="mm-encoder",
                        gpu=0,
                        flags=("--max-running-requests", "2"),
                        vram_gib=4.0,
                    ),
                    *(
                        WorkerPlacement(
                            role=role, gpu=0, flags=(*_PAGE, *_MM_SINGLE_GPU), vram_gib=6.0
                        )
                        for role in ("mm-prefill", "mm-decode")
                    ),
                ),
                start_order=("mm-prefill", "mm-decode", "mm-encoder"),
            ),
            # Encoder and prefill share GPU 0 (the encoder loads only the vision tower).
            Placement(
                gpus=2,
                workers=(
                    WorkerPlacement(
                        role="mm-encoder",
                        gpu=0,
                        flags=("--max-running-requests", "2"),
                        vram_gib=4.0,
                    ),
                    WorkerPlacement(
                        role="mm-prefill",
                        gpu=0,
                        flags=(*_PAGE, "--max-total-tokens", "4096"),
                        vram_gib=8.0,
                    ),
                    WorkerPlacement(role="mm-decode", gpu=1, flags=_PAGE, vram_gib=6.0),
                ),
                start_order=("mm-prefill", "mm-decode", "mm-encoder"),
            ),
        )
    ),
    known_violations=(
        KnownViolation(
            kind=LISTED_EARLY,
            # From 1.3, whose cards' `needs` leave `encode` out (findings 1 and 7; measured on
            # 1.3.1 and 1.5.1 in the history, 1.6.1 in the scenarios).
            dynamo_versions=("1.3.1", "1.4.2", "1.5.1", "1.6.1"),
            reason="Dynamo 1.3 and later list the model in /v1/models as soon as the internal "
            "prefill and decode cards exist, and (1.6.1) answer 404 'Model not found' until the "
            "encoder's card is attached (measured: persistent when the encoder never registers)",
        ),
        KnownViolation(
            kind=BAD_CONTENT,
            # Measured on each (1.4.2: the history's 4096; 1.5.1: 4096 with the scheduler-cut
            # stand-in, whose card timing differs from the whole-generate one's).
            dynamo_versions=("1.4.2", "1.5.1", "1.6.1"),
            reason="Dynamo 1.6.1's GET /v1/models reports the context length of whichever of "
            "the model's cards its map of display name to context length keeps: here the "
            "encoder's 4096 or the P/D workers' --context-length 2048, varying from run to run "
            "(measured: 2048 twice, 4096 twice); the model serves 2048 at most",
            shape="listing[default]",
            cites=("lib/llm/src/http/service/openai.rs (list_models_openai)",),
        ),
        MM_CANARY_REJECTED,
        ENCODER_READY_BEFORE_CARD,
        ENCODER_NEVER_READY,
        *PROCESSOR_OWN_CHUNKS,
    ),
)

# Finding 25: 1.0's diffusion registrations name the card after the model path ("diffusion
# workers don't have served_model_name"), so the served name is never listed (measured on
# 1.0.2 in the history and with `conformance --dynamo-env`; 1.1 reads served_model_name).
_REGISTER_1_0 = "components/src/dynamo/sglang/register.py (1.0.2)"
DIFFUSION_SERVED_NAME_IGNORED = (
    KnownViolation(
        kind=WRONG_CARD,
        dynamo_versions=("1.0.2",),
        reason="Dynamo 1.0's image and video registrations take the model path as the card's "
        "name, whatever --served-model-name says (finding 25; 1.1 reads served_model_name)",
        cites=(
            f"{_REGISTER_1_0}: register_image_diffusion_model, lines 301-302",
            f"{_REGISTER_1_0}: register_video_generation_model, lines 356-357",
        ),
    ),
    KnownViolation(
        kind=NEVER_LISTED,
        dynamo_versions=("1.0.2",),
        reason="Dynamo 1.0's diffusion card carries the model path as its name, so the "
        "frontend lists that and never the served name; a request for it is answered 404 "
        "(finding 25)",
        cites=(f"{_REGISTER_1_0}: register_image_diffusion_model, lines 301-302",),
    ),
)


IMAGE_DIFFUSION = Topology(
    name="image-diffusion",
    eras=eras.DIFFUSION_ERAS,
    workers=(
        WorkerSpec(
            role="image-diffusion",
            component="backend",
            model="image",
            card=ExpectedCard(model_type=CHAT_IMAGES, model_input="Text", worker_type="aggregated"),
            flags=("--image-diffusion-worker",),
            start_paths=("init_image_diffusion",),
        ),
    ),
    requests=("image",),
    shapes=EVERY_SHAPE,
    gpu=GpuProfile(
        placements=(
            Placement(
                gpus=1,
                workers=(WorkerPlacement(role="image-diffusion", gpu=0, vram_gib=19.3),),
                start_order=(),
                start_timeout_s=240,
            ),
        ),
        nightly=True,
    ),
    known_violations=(
        *DIFFUSION_SERVED_NAME_IGNORED,
        KnownViolation(
            kind=BAD_CONTENT,
            dynamo_versions=("1.1.1", "1.2.1", "1.3.1", "1.4.2", "1.5.1", "1.6.1"),
            reason="Dynamo 1.6.1's image diffusion handler never reads `n`: it only logs whether "
            "the request has one, asks DiffGenerator.generate for no output count and keeps the "
            "first result of a list, so n=2 is answered with one image on any engine (measured "
            "the same on 1.1.1-1.5.1: finding 26)",
            shape="image[n-2]",
            cites=(
                "dynamo/sglang/request_handlers/image_diffusion/image_diffusion_handler.py "
                "(1.6.1: generate, _generate_images)",
            ),
        ),
        KnownViolation(
            kind=BAD_RESPONSE,
            dynamo_versions=("1.1.1", "1.2.1", "1.3.1"),
            reason="Dynamo 1.1-1.3's frontend reads the images request's `size` as OpenAI's "
            "enum: a size a diffusion model takes (384x512) is answered 400 'unknown variant "
            "`384x512`, expected one of `auto`, `256x256`, `512x512`, ...' before any worker "
            "sees it (finding 26; 1.4 on passes any WxH to the worker)",
            shape="image[size]",
            cites=(
                "the frontend's images request type (1.3.1: its deserialisation error, measured "
                "on 1.1.1, 1.2.1 and 1.3.1)",
            ),
        ),
        KnownViolation(
            kind=BAD_INPUT_ANSWER,
            dynamo_versions=("1.4.2", "1.5.1"),
            reason="Dynamo 1.4-1.5's image handler catches every exception, a size it cannot "
            "parse included, and yields a response with empty `data`: 200 with no image "
            "(finding 26; 1.6.1 raises InvalidArgument, 400)",
            shape="image[unknown-size]",
            cites=(
                "dynamo/sglang/request_handlers/image_diffusion/image_diffusion_handler.py "
                "(1.5.1: generate's except Exception, lines 151-158)",
            ),
        ),
    ),
)

VIDEO_GENERATION = Topology(
    name="video-generation",
    eras=eras.VIDEO_ERAS,
    workers=(
        WorkerSpec(
            role="video-generation",
            component="backend",
            model="video",
            card=ExpectedCard(model_type=VIDEOS, model_input="Text", worker_type="aggregated"),
            flags=("--video-generation-worker",),
            start_paths=("init_video_diffusion",),
        ),
    ),
    requests=("video",),
    known_violations=(
        *DIFFUSION_SERVED_NAME_IGNORED,
        KnownViolation(
            kind=CANARY_REJECTED,
            dynamo_versions=("1.2.1",),
            reason="Dynamo 1.2's video canary generates a video, whose encoding needs NVENC "
            "(finding 28): without it every canary fails in ffmpeg (the handler answers the "
            "error, so the worker stays ready)",
            cites=(
                "dynamo/sglang/request_handlers/video_generation/video_generation_handler.py "
                "(1.2.1: _frames_to_video, codec='h264_nvenc')",
            ),
        ),
        KnownViolation(
            kind=BAD_CONTENT,
            dynamo_versions=("1.2.1",),
            reason="Dynamo 1.2's video handler encodes only with h264_nvenc, NVIDIA's hardware "
            "encoder, with no fallback: where there is none (the CPU tier; H100 and A100 have "
            "no NVENC) ffmpeg's pipe breaks and every video is answered 200 `status: failed` "
            "(finding 28; 1.3 retries with libx264, 1.1 and 1.4 on use a software codec)",
            shape="video[default]",
            cites=(
                "dynamo/sglang/request_handlers/video_generation/video_generation_handler.py "
                "(1.2.1: _frames_to_video, codec='h264_nvenc', lines 262-299; 1.3.1: the "
                "libx264 retry, lines 305-313)",
            ),
        ),
        KnownViolation(
            kind=BAD_CONTENT,
            dynamo_versions=("1.3.1",),
            reason="Dynamo 1.3's video handler retries with libx264 only when NVENC's failure "
            "surfaces as an OSError while frames are written; when ffmpeg fails only at close "
            "(a loaded machine: 7 of 20 encodes here), imageio returns 0 bytes and the video is "
            "answered 200 `completed` with an empty b64_json (finding 36)",
            shape="video[default]",
            cites=(
                "dynamo/sglang/request_handlers/video_generation/video_generation_handler.py "
                "(1.3.1: _frames_to_video, the except OSError retry, lines 305-313)",
            ),
        ),
        KnownViolation(
            kind=BAD_INPUT_ANSWER,
            dynamo_versions=("1.1.1", "1.2.1", "1.3.1", "1.4.2", "1.5.1"),
            reason="Before 1.6 the frontend passes an unknown video `response_format` on and "
            "the video handler answers it 200 (finding 27)",
            shape="video[unknown-format]",
            cites=(
                "dynamo/sglang/request_handlers/video_generation/video_generation_handler.py "
                "(1.5.1: generate's except Exception, lines 173-185)",
            ),
        ),
        KnownViolation(
            kind=BAD_INPUT_ANSWER,
            dynamo_versions=("1.1.1", "1.2.1", "1.3.1", "1.4.2", "1.5.1", "1.6.1"),
            reason="Dynamo 1.6.1's video handler catches every exception, a size it cannot "
            'parse included, and yields a `status: "failed"` response with no video: the '
            "frontend answers it 200 (finding 23; the image handler raises InvalidArgument, 400)",
            shape="video[unknown-size]",
            cites=(
                "dynamo/sglang/request_handlers/video_generation/video_generation_handler.py "
                "(1.6.1: generate's except, _parse_size)",
            ),
        ),
    ),
    gpu=GpuProfile(
        placements=(
            Placement(
                gpus=1,
                workers=(WorkerPlacement(role="video-generation", gpu=0, vram_gib=17.6),),
                start_order=(),
                start_timeout_s=420,
            ),
        ),
        nightly=True,
    ),
)

# -- start paths beyond the first eight (dynamo.sglang 1.6.1) --------------------------------

_MM_NATIVE_WORKERS = (
    # sglang's own multimodal processing inside one aggregated worker: no encoder.
    WorkerSpec(
        role="mm-agg",
        component="backend",
        model="vision-language",
        card=ExpectedCard(
            model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="aggregated"
        ),
        flags=("--enable-multimodal", "--chat-template", "qwen2-vl"),
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
        WorkerSpec(
            role="mm-prefill",
            component="prefill",
            model="vision-language",
            card=ExpectedCard(
                model_type="Prefill",
                model_input="Tokens",
                worker_type="prefill",
                needs=(("decode",),),
                public=False,
            ),
            flags=(
                "--enable-multimodal",
                "--chat-template",
                "qwen2-vl",
                "--disaggregation-mode",
                "prefill",
                *_NIXL,
            ),
            start_paths=("init_prefill",),
        ),
        WorkerSpec(
            role="mm-decode",
            component="backend",
            model="vision-language",
            card=ExpectedCard(
                model_type=CHAT_COMPLETIONS,
                model_input="Tokens",
                worker_type="decode",
                needs=(("prefill",),),
            ),
            flags=(
                "--enable-multimodal",
                "--chat-template",
                "qwen2-vl",
                "--disaggregation-mode",
                "decode",
                *_NIXL,
            ),
        ),
    ),
    requests=_MM_REQUESTS,
    marks=("multimodal",),
    gpu=GpuProfile(
        placements=(
            # The caps of Dynamo's single-GPU multimodal P/D (multimodal_disagg.sh
            # --single-gpu): absolute KV and context caps. Fractions alone do not share a GPU
            # in sglang 0.5.21 (each applies to the memory free when its worker starts: 0.4
            # and 0.4 left the decode worker ~0.3 GiB of KV cache).
            Placement(
                gpus=1,
                workers=tuple(
                    WorkerPlacement(role=role, gpu=0, flags=(*_PAGE, *_MM_SINGLE_GPU), vram_gib=8.0)
                    for role in ("mm-prefill", "mm-decode")
                ),
                start_order=("mm-prefill", "mm-decode"),
                start_timeout_s=470,
            ),
            Placement(
                gpus=2,
                workers=(
                    WorkerPlacement(role="mm-prefill", gpu=0, flags=_PAGE, vram_gib=8.0),
                    WorkerPlacement(role="mm-decode", gpu=1, flags=_PAGE, vram_gib=8.0),
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
    WorkerSpec(
        role="leader",
        component="backend",
        model="text",
        card=ExpectedCard(
            model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="aggregated"
        ),
        flags=(*_MULTINODE, "--node-rank", "0"),
    ),
    WorkerSpec(
        role="follower",
        component="backend",
        model="text",
        card=None,
        flags=(*_MULTINODE, "--node-rank", "1"),
        start_paths=("init_decode/non_leader",),
        stays_out_log=r"Non-leader node detected",
    ),
)
MULTINODE = Topology(
    name="multinode",
    eras=eras.multinode_eras(_MULTINODE_WORKERS),
    known_violations=(CARD_BEFORE_INSTANCE,),
    workers=_MULTINODE_WORKERS,
    requests=_TEXT_REQUESTS,
    gpu=GpuProfile(
        placements=(
            # One GPU per node on one host: sglang's custom all-reduce check fails there and
            # falls back to NCCL (parallel_state.py); say so up front instead.
            Placement(
                gpus=2,
                workers=tuple(
                    WorkerPlacement(
                        role=role, gpu=gpu, flags=("--disable-custom-all-reduce",), vram_gib=3.7
                    )
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
                model_type=CHAT_COMPLETIONS,
                model_input="Tokens",
                worker_type="aggregated",
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
    WorkerSpec(
        role="diffusion-llm",
        component="backend",
        model="diffusion-llm",
        card=ExpectedCard(
            model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="aggregated"
        ),
        flags=("--dllm-algorithm", "LowConfidence", "--trust-remote-code"),
        start_paths=("init_llm_diffusion",),
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
        placements=(
            Placement(
                gpus=1,
                workers=(
                    WorkerPlacement(
                        role="diffusion-llm",
                        gpu=0,
                        flags=("--mem-fraction-static", "0.7"),
                        vram_gib=56.0,
                    ),
                ),
                start_order=(),
                start_timeout_s=600,
            ),
        ),
        nightly=True,
    ),
)

# LoRA adapters registered at runtime, on both roles of a P/D pair: each load publishes a
# LoRA card on its worker (a prefill worker's must stay Prefill, never Chat: Dynamo PR
# #8945), each unload removes it. Proven in lora-p-d's own verdict
# (harness/deployment/lora.py: runtime_cycle).
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
# Finding 19: 1.6.1's load_lora rebuilds the LoRA card's runtime config with
# get_runtime_config, but the engine-native generate capability is added only by the base
# registration, so every LoRA card lacks that one key (and nothing else).
LORA_WITHOUT_GENERATE_CAPABILITY = KnownViolation(
    kind=LORA_WITHOUT_RUNTIME_DATA,
    dynamo_versions=("1.6.1",),
    reason="Dynamo 1.6.1's load_lora builds the LoRA card's runtime config with "
    "get_runtime_config (parsers, token budget, KV blocks: all as the base card's), but the "
    "engine-native generate capability `sglang_generate` is set only in the base "
    "registration, so each LoRA card's runtime_data lacks that key (measured on both roles)",
    shape=lora_shape(["sglang_generate"]),
    cites=(
        "dynamo/sglang/request_handlers/handler_base.py (1.6.1: load_lora lines 321-343)",
        "dynamo/sglang/register.py (1.6.1: _register_model_with_runtime_config lines 218-225)",
        "ai-dynamo/dynamo#14862 (LoRA cards registered without the base's runtime data)",
    ),
)
# Finding 22: on 1.4.2, unloading a LoRA from the prefill worker deactivates the base model's
# prefill router: the next chat for the base model goes to the decode worker alone, which
# refuses it without bootstrap_info (500).
LORA_UNLOAD_DEACTIVATES_PREFILL = KnownViolation(
    kind=BAD_RESPONSE,
    dynamo_versions=("1.4.2",),
    reason="Dynamo 1.4.2's frontend, removing the LoRA's prefill worker set at unload, logs "
    "'Prefill router deactivated (all prefill workers removed)' for the base model: the base "
    "model's next chat reaches the decode worker without bootstrap_info and answers 500 "
    "('bootstrap_info is required for disaggregated decode')",
    cites=(
        "lib/llm/src/kv_router/prefill_router (1.4.2: activation on worker-set removal)",
        "dynamo/sglang/request_handlers/llm/decode_handler.py (1.4.2: generate line 383)",
    ),
)
# Finding 32 for a LoRA: listed on the first card's arrival, answered 404 'Model not found'
# right after, while every worker's LoRA card is already in etcd.
LORA_UNROUTABLE_WHEN_LISTED = KnownViolation(
    kind=BAD_RESPONSE,
    dynamo_versions=("1.1.1", "1.2.1"),
    reason="Dynamo before 1.3 lists a LoRA of a prefill/decode pair before its router can "
    "serve it: a chat for the adapter right after the listing answers 404 'Model not found' "
    "although both workers' LoRA cards are in etcd (finding 32; seen on 1.2.1)",
    window=KnownWindow(after=LORA_LISTED, seconds=2.0),
    cites=("ai-dynamo/dynamo#9815 (topology readiness: the fix, from 1.3)",),
)
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
    known_violations=(
        LORA_WITHOUT_GENERATE_CAPABILITY,
        LORA_UNLOAD_DEACTIVATES_PREFILL,
        PAIR_LISTED_EARLY,
        PAIR_UNROUTABLE_WHEN_LISTED,
        LORA_UNROUTABLE_WHEN_LISTED,
    ),
)

# Before 1.1, Dynamo's GET /v1/models answered each model as {"object": "object"} with no
# context window (measured on 0.7.1: `{"id": ..., "object": "object", "created": ...,
# "owned_by": "nvidia"}`); the listing check (its OpenAI shape and the model's context length)
# reports it on every topology of those releases without failing their registration verdicts.
OLD_RELEASE_LISTING = KnownViolation(
    kind=BAD_CONTENT,
    dynamo_versions=("0.7.0", "0.7.1", "0.8.0", "0.8.1", "0.9.1", "1.0.2"),
    reason="Dynamo before 1.1 lists each model with object 'object' and no context window "
    "(the OpenAI model object says 'model'; the harness checks the context length since "
    "issue 25)",
    shape="listing[default]",
    cites=("lib/llm/src/http/service/openai.rs (list_models_openai, before 1.1)",),
)

# Finding 29: 1.0.x's canary looks its own instance up before the instance is known to the
# runtime's router: "Health check request failed for generate: instance_id=… not found" for
# every endpoint with a payload (measured on 1.0.2 on every such worker); with the endpoint
# list set, a failed canary turns a ready endpoint not ready again.
CANARY_INSTANCE_NOT_FOUND = (
    KnownViolation(
        kind=CANARY_REJECTED,
        dynamo_versions=("1.0.2",),
        reason="Dynamo 1.0's canary fails 'instance_id=… not found for endpoint …' on every "
        "worker with a health-check payload (upstream #8294; the fix was backported to 1.1.0)",
        cites=(
            "ai-dynamo/dynamo#8294 (sglang decode canaries: instance_id not found)",
            "ai-dynamo/dynamo#8816 (its backport to 1.1.0)",
        ),
    ),
    KnownViolation(
        kind=UNREADY_AFTER_READY,
        dynamo_versions=("1.0.2",),
        reason="Dynamo 1.0 sets an endpoint Ready eagerly and a failed canary turns it not "
        "ready (upstream #8165), and every canary of 1.0 fails (#8294)",
        cites=("ai-dynamo/dynamo#8165 (a failed first canary flips Ready)",),
    ),
)

# Measured by the history run of 2026-12-06 (0.7.0-1.5.1, every topology that serves text chat):
# the frontend renders an image part of a chat for a text-only model as if it were not there
# and answers 200; 1.6.1's preprocessor refuses it with 400 "Model does not accept image input;
# received unsupported content type 'image_url'" (finding 24).
IMAGE_TO_TEXT_ONLY_ACCEPTED = KnownViolation(
    kind=BAD_INPUT_ANSWER,
    dynamo_versions=(
        "0.7.0",
        "0.7.1",
        "0.8.0",
        "0.8.1",
        "0.9.1",
        "1.0.2",
        "1.1.1",
        "1.2.1",
        "1.3.1",
        "1.4.2",
        "1.5.1",
    ),
    reason="Dynamo before 1.6 answers an image sent to a text-only model with 200, the image "
    "dropped (1.6.1's frontend answers 400 'Model does not accept image input'; finding 24)",
    shape="chat[image-to-text-only]",
    cites=("the frontend's chat preprocessor (lib/llm, before 1.6): no modality check",),
)

# Finding 34: 0.7.0's completion request type never hands `stop` to the preprocessor, so a
# completion answers past its stop sequences (chat honours them); fixed in 0.7.1.
COMPLETION_STOP_IGNORED = KnownViolation(
    kind=BAD_CONTENT,
    dynamo_versions=("0.7.0",),
    reason="Dynamo 0.7.0's frontend ignores `stop` on /v1/completions (the completion "
    "request's get_stop returned nothing; finding 34): the text runs past its stop sequences",
    shape="completion[stop]",
    cites=(
        "ai-dynamo/dynamo#4755 (completions: stop not honoured)",
        "ai-dynamo/dynamo#4782 (the frontend populates stop; in 0.7.1)",
    ),
)


# The older releases whose readiness contract was measured (each one's workers run with the
# operator's settings: /health with the endpoint list, the canary): what they get wrong is
# declared above per topology (findings 20-22, 29). The frontend's /ready is judged from 1.3:
# 1.0.2-1.2.1's frontends have no /v1/models/{model}/ready (404 "Model not found"; measured
# on 1.1.1 and 1.2.1; findings.md, "Readiness across releases").
READINESS_RELEASES = ">=1.0,<1.6"
FRONTEND_READINESS_RELEASES = ">=1.3,<1.6"


def _with_release_wide(topology: Topology) -> Topology:
    """Every topology carries the known violations of a release's frontend, not of a mode."""
    known = (
        *topology.known_violations,
        OLD_RELEASE_LISTING,
        IMAGE_TO_TEXT_ONLY_ACCEPTED,
        COMPLETION_STOP_IGNORED,
        *CANARY_INSTANCE_NOT_FOUND,
    )
    return dataclasses.replace(
        topology,
        known_violations=known,
        readiness_releases=READINESS_RELEASES,
        frontend_readiness_releases=FRONTEND_READINESS_RELEASES,
    )


CATALOGUE: tuple[Topology, ...] = tuple(
    map(
        _with_release_wide,
        (
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
        ),
    )
)

# Start paths of dynamo.sglang 1.6.1 that no topology takes, each with why (see
# discovery_harness.judge.coverage: a start path neither covered nor listed here fails the guard).
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
