"""The catalogue's topologies as older Dynamo releases deploy them: contracts per release range.

Each era's contract is what that release's own design says a worker must publish, with its
source in a comment: the PR that introduced or fixed the mode, the release's launch scripts,
or the design notes it ships (`dynamo/sglang/AGENTS.md` in the ai-dynamo wheel, from 1.0).
Never what the release happens to do: `python -m discovery_harness history` finds that out by
running
each. The release-independent invariants (a routed generate endpoint has a card unless
declared not to; a card has a live instance; an internal card is not public; a listed model
serves) are the harness's checks and hold in every era.

Eras, newest first:
- >=1.3,<1.6: the current design (the topologies' own workers): cards carry `worker_type` and
  `needs` (Dynamo PRs #8700, #9397, #9815; the 1.3 AGENTS.md's entry points are 1.6's flags:
  `--enable-multimodal --disaggregation-mode encode`, `--dedicated-mm-encoder`).
- >=1.0,<1.3: the same workers and flags, cards without `worker_type` / `needs` (those PRs
  came later); multimodal as the release's AGENTS.md describes it (below).
- <1.0 (0.7-0.9, sglang 0.5.4-0.5.8): the namespace comes from DYN_NAMESPACE (no --namespace
  in dynamo.sglang's args before the 1.0 runtime-args group); requests travel over NATS on 0.7
  and TCP from 0.8; multimodal serving is a processor in front of the workers
  (`--multimodal-processor`, `--multimodal-encode-worker`, `--multimodal-worker`), the
  processor tokenizes and is the public model, the encode worker accepts only model names it
  knows (Qwen/Qwen2.5-VL-7B-Instruct).

Multimodal, the design per range:
- 0.7-0.8 (Dynamo #4486 / PR #4512): each of the three multimodal init functions registers a
  card, internal (not advertised); the processor alone is public.
- 0.9-1.0 (PR #5500, "Encode/prefill/decode worker is an internal component, should not
  register with Frontend, only needs to provide internal service endpoint for Processor to
  call"; PR #5986 removed the PD worker's card that competed with the processor's): the
  processor is public, every multimodal worker serves an internal endpoint and publishes no
  card.
- 1.1-1.2 (the 1.1 AGENTS.md: "MultimodalEncodeWorkerHandler: Front-facing ... Receives
  pre-tokenized requests (ModelInput.Tokens) from Rust frontend"; PR #7517 removed the
  processor): the encode worker is the public model; the PD / prefill / decode workers stay
  internal endpoints without cards (PR #5500's design, unchanged until worker_type).
- 1.3-1.5: the current design (internal workers register Empty cards with their role).
"""

from __future__ import annotations

import dataclasses

from discovery_harness.model.contract import CHAT_COMPLETIONS, EMBEDDING, EMPTY, ExpectedCard
from discovery_harness.model.topology import Era, WorkerSpec

ERA_0_X = ">=0.7,<1.0"
# The request plane of each part of the era: 0.7 serves over NATS only; 0.8 added the TCP
# plane (DYN_REQUEST_PLANE) and made it the default.
_PLANES = ((">=0.7,<0.8", "nats"), (">=0.8,<1.0", "tcp"))
_PLANES_0_7_8 = ((">=0.7,<0.8", "nats"), (">=0.8,<0.9", "tcp"))
_VL_NAME = "Qwen/Qwen2.5-VL-7B-Instruct"
_VL_FLAGS = ("--chat-template", "qwen2-vl")
# Internal: not advertised (model type Empty); what it takes as input was not fixed then.
_INTERNAL = ExpectedCard(model_type=EMPTY, model_input=None, worker_type="", needs=(), public=False)
_MM_REQUESTS = ("chat-image", "chat-image-stream")


def _internal_endpoint(worker: WorkerSpec) -> WorkerSpec:
    """PR #5500's design: the worker serves its peers and publishes no card."""
    return dataclasses.replace(worker, card=None, internal_endpoint=True)


_PROCESSOR = WorkerSpec(
    role="mm-processor",
    component="processor",
    model="vision-language",
    card=ExpectedCard(model_type=CHAT_COMPLETIONS, model_input="Text", worker_type="", needs=()),
    flags=("--multimodal-processor", *_VL_FLAGS),
    start_paths=("init_multimodal_processor",),
)
_ENCODER = WorkerSpec(
    role="mm-encoder",
    component="encoder",
    model="vision-language",
    card=_INTERNAL,
    flags=("--multimodal-encode-worker", *_VL_FLAGS),
    start_paths=("init_multimodal_encode_worker",),
)


def _mm_worker(role: str, component: str, path: str, *mode: str) -> WorkerSpec:
    return WorkerSpec(
        role=role,
        component=component,
        model="vision-language",
        card=_INTERNAL,
        flags=("--multimodal-worker", *_VL_FLAGS, "--skip-tokenizer-init", *mode),
        start_paths=(path,),
    )


def _era(
    workers: tuple[WorkerSpec, ...], planes: tuple[tuple[str, str], ...] = _PLANES, **more: object
) -> tuple[Era, ...]:
    """A <1.0 declaration (namespace from DYN_NAMESPACE), once per request-plane range."""
    return tuple(
        Era(releases=releases, workers=workers, namespace_flag=False, request_plane=plane, **more)  # type: ignore[arg-type]
        for releases, plane in planes
    )


# The current design from 1.3 (worker_type / needs), and 1.0-1.2 without those card fields.
CURRENT_DESIGN = (
    Era(releases=">=1.3,<1.6"),
    Era(releases=">=1.0,<1.3", topology_fields=False),
)


def added_in(release: str, source: str) -> tuple[Era, ...]:
    """A mode the releases before `release` do not have: skipped there, with the source."""
    return (Era(releases=f">=0.7,<{release}", unsupported=f"mode added in {release} ({source})"),)


_AGGREGATED_0_X = WorkerSpec(
    role="worker",
    component="backend",
    model="text",
    card=ExpectedCard(model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="", needs=()),
    flags=("--skip-tokenizer-init",),
    start_paths=("init",),
)
AGGREGATED_ERAS = (*CURRENT_DESIGN, *_era((_AGGREGATED_0_X,)))

# Disaggregated P/D. 0.7: the decode worker calls the prefill component itself (its handler
# takes a `prefill_client`), so prefill is an internal endpoint; PR #4635 ("frontend based
# prefill request routing for sglang", 0.8) has the prefill worker register a Prefill card
# (PR #3709: "discovered as the Prefill model type"), which the frontend does not advertise.
_NIXL = ("--disaggregation-transfer-backend", "nixl")
_PREFILL_0_X = WorkerSpec(
    role="prefill",
    component="prefill",
    model="text",
    card=ExpectedCard(
        model_type="Prefill", model_input="Tokens", worker_type="", needs=(), public=False
    ),
    flags=("--skip-tokenizer-init", "--disaggregation-mode", "prefill", *_NIXL),
    start_paths=("init_prefill",),
)
_DECODE_0_X = WorkerSpec(
    role="decode",
    component="backend",
    model="text",
    card=ExpectedCard(model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="", needs=()),
    flags=("--skip-tokenizer-init", "--disaggregation-mode", "decode", *_NIXL),
    start_paths=("init",),
)
DISAGGREGATED_ERAS = (
    *CURRENT_DESIGN,
    *_era((_internal_endpoint(_PREFILL_0_X), _DECODE_0_X), ((">=0.7,<0.8", "nats"),)),
    *_era((_PREFILL_0_X, _DECODE_0_X), ((">=0.8,<1.0", "tcp"),)),
)
EMBEDDING_ERAS = (
    *CURRENT_DESIGN,
    *_era(
        (
            WorkerSpec(
                role="embedding",
                component="backend",
                model="embedding",
                card=ExpectedCard(
                    model_type=EMBEDDING, model_input="Text", worker_type="", needs=()
                ),
                flags=("--embedding-worker",),
                start_paths=("init_embedding",),
            ),
        )
    ),
)

_MM_PD_0_X = _mm_worker("mm-worker", "backend", "init_multimodal_worker")
_MM_PREFILL_0_X = _mm_worker(
    "mm-prefill", "prefill", "init_multimodal_prefill_worker", "--disaggregation-mode", "prefill"
)
_MM_DECODE_0_X = _mm_worker(
    "mm-decode", "backend", "init_multimodal_worker", "--disaggregation-mode", "decode"
)
_MM_0_X = {"requests": _MM_REQUESTS, "served_model_name": _VL_NAME}
_PROCESSOR_DESIGN = ((">=0.9,<1.0", False), (">=1.0,<1.1", True))  # (range, --namespace)


def _processor_eras(*workers: WorkerSpec) -> tuple[Era, ...]:
    """0.7-0.8: #4512's internal cards; 0.9-1.0: PR #5500's internal endpoints."""
    internal = tuple(map(_internal_endpoint, workers))
    return (
        *_era((_PROCESSOR, *workers), _PLANES_0_7_8, **_MM_0_X),
        *(
            Era(releases=r, workers=(_PROCESSOR, *internal), namespace_flag=flag, **_MM_0_X)  # type: ignore[arg-type]
            for r, flag in _PROCESSOR_DESIGN
        ),
    )


# 1.1-1.2: no processor; the encode worker is the public model (Tokens in), the others are
# internal endpoints. `--embedding-transfer-mode local`: the default nixl-write needs NIXL.
_MM_1_1 = ("--chat-template", "qwen2-vl", "--embedding-transfer-mode", "local")
_ENCODER_1_1 = dataclasses.replace(
    _ENCODER,
    card=ExpectedCard(model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="", needs=()),
    flags=("--multimodal-encode-worker", *_MM_1_1),
)


def _worker_1_1(role: str, component: str, path: str, *mode: str) -> WorkerSpec:
    return _internal_endpoint(
        WorkerSpec(
            role=role,
            component=component,
            model="vision-language",
            card=None,
            flags=("--multimodal-worker", *_MM_1_1, "--skip-tokenizer-init", *mode),
            start_paths=(path,),
        )
    )


def _encoder_eras(*workers: WorkerSpec) -> tuple[Era, ...]:
    return (Era(releases=">=1.1,<1.3", workers=(_ENCODER_1_1, *workers), requests=_MM_REQUESTS),)


MM_ENCODE_PD_ERAS = (
    Era(releases=">=1.3,<1.6"),
    *_encoder_eras(_worker_1_1("mm-worker", "backend", "init_multimodal_worker")),
    *_processor_eras(_ENCODER, _MM_PD_0_X),
)
MM_ENCODE_P_D_ERAS = (
    Era(releases=">=1.3,<1.6"),
    *_encoder_eras(
        _worker_1_1(
            "mm-prefill",
            "prefill",
            "init_multimodal_prefill_worker",
            "--disaggregation-mode",
            "prefill",
        ),
        _worker_1_1(
            "mm-decode", "backend", "init_multimodal_worker", "--disaggregation-mode", "decode"
        ),
    ),
    *_processor_eras(_ENCODER, _MM_PREFILL_0_X, _MM_DECODE_0_X),
)

# Modes that later releases added (each release's dynamo/sglang/main.py dispatch shows the
# flag appear; the PR named is the one that introduced it).
RERANK_ERAS = added_in("1.6", "--rerank-worker")
GATEWAY_ERAS = added_in("1.6", "--gateway-workers, PR #15078")
# The diffusion workers' contracts from 1.0 are the current design's (the 1.0 AGENTS.md:
# "register.py has three paths: LLM, image diffusion, video generation"); on the CPU tier
# sglang 0.5.9-0.5.18's DiffGenerator is stood in for as 0.5.21's is (same two methods:
# discovery_harness_workers.cpu_diffusion, checked by the drift test per release).
DIFFUSION_ERAS = (*CURRENT_DESIGN, *added_in("1.0", "--image-diffusion-worker"))
VIDEO_ERAS = (*CURRENT_DESIGN, *added_in("1.0", "--video-generation-worker"))


def legacy(
    worker: WorkerSpec, path: str, *, drop: tuple[str, ...] = (), add: tuple[str, ...] = ()
) -> WorkerSpec:
    """One of a topology's own workers as a release before `worker_type` / `needs` (<1.3)
    declares it: the card without those fields, the release's flags and start path."""
    card = worker.card and dataclasses.replace(worker.card, worker_type="", needs=())
    flags = (*(f for f in worker.flags if f not in drop), *add)
    return dataclasses.replace(worker, flags=flags, card=card, start_paths=(path,))


def _in_0_9(*workers: WorkerSpec) -> tuple[Era, ...]:
    return _era(workers, ((">=0.9,<1.0", "tcp"),))


# The diffusion LLM from 0.9 (PR #5533, "v0 diffusion handler support": "Utilized existing
# sglang configuration flags to set diffusion algorithm"): 0.9.1's args.py sets
# `diffusion_worker = server_args.dllm_algorithm is not None` and main.py dispatches it to
# `init_diffusion`, which registers the model like `init` (register_llm_with_readiness_gate,
# the endpoint types' model type, Tokens in). The flag is sglang's --dllm-algorithm, as on 1.6;
# what differs is the era (DYN_NAMESPACE, no worker_type) and the start path's name.
def llm_diffusion_eras(own: tuple[WorkerSpec, ...]) -> tuple[Era, ...]:
    (worker,) = own
    return (
        *CURRENT_DESIGN,
        *_in_0_9(legacy(worker, "init_diffusion", add=("--skip-tokenizer-init",))),
        *added_in("0.9", "--dllm-algorithm / init_diffusion, PR #5533"),
    )


# sglang's own multimodal processing in one aggregated worker: PR #5450 ("SGLang aggregated
# multimodal support", in 0.9: the decode handler passes the request's multi_modal_data
# image URLs to the engine as image_data; 0.7/0.8's handler has no image_data). Its launch
# line is `python -m dynamo.sglang --model-path <VL model> --chat-template qwen2-vl`: no
# --enable-multimodal, which dynamo.sglang's args gained in 1.3 (backend_args.py). The worker
# registers as the plain aggregated worker does (Chat, Tokens in).
_ENABLE_MM = ("--enable-multimodal",)


def mm_native_eras(own: tuple[WorkerSpec, ...]) -> tuple[Era, ...]:
    (worker,) = own
    return (
        Era(releases=">=1.3,<1.6"),
        Era(releases=">=1.0,<1.3", workers=(legacy(worker, "init_decode", drop=_ENABLE_MM),)),
        *_in_0_9(legacy(worker, "init", drop=_ENABLE_MM, add=("--skip-tokenizer-init",))),
        *added_in("0.9", "aggregated multimodal, PR #5450"),
    )


# Images through a plain prefill/decode pair: PR #10643 ("support multimodal inputs in sglang
# disaggregated prefill/decode": before it "the prefill and decode handlers never passed it
# to async_generate"), in 1.3 (request_handlers/llm/mm_disagg_utils.py first ships there).
MM_NATIVE_P_D_ERAS = (
    Era(releases=">=1.3,<1.6"),
    *added_in("1.3", "multimodal inputs on a prefill/decode pair, PR #10643"),
)


# Multi-node: every release's init functions stop a node_rank >= 1 at a non-leader handler
# that logs "Non-leader node detected" and serves nothing (0.7-0.9: main.py's
# _handle_non_leader_node, which only sets up the Prometheus registry; 1.0+:
# publisher.handle_non_leader_node); the rank-0 leader registers as the aggregated worker
# does. PR #5597 (vLLM's non-leader refactor) names this SGLang's approach: "Non-leader nodes
# skip: model registration, endpoint serving".
def multinode_eras(own: tuple[WorkerSpec, ...]) -> tuple[Era, ...]:
    leader, follower = own
    skip = ("--skip-tokenizer-init",)
    return (
        *CURRENT_DESIGN,
        *_era((legacy(leader, "init", add=skip), legacy(follower, "init/non_leader", add=skip))),
    )


# Runtime LoRA: the load_lora / unload_lora / list_loras endpoints and the LoRA cards first
# ship in 1.1's init_llm.py and handler_base.py (PR #4769, "add LoRA support for SGLang";
# 1.0.2's dynamo.sglang has no LoRA code). 1.1.1's handler_base already registers a prefill
# worker's LoRA as Prefill (PR #8945's fix), the 1.6 contract without worker_type / needs.
LORA_P_D_ERAS = (
    Era(releases=">=1.3,<1.6"),
    Era(releases=">=1.1,<1.3", topology_fields=False),
    *added_in("1.1", "load_lora / unload_lora endpoints, PR #4769"),
)
