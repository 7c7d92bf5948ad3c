"""The catalogue's topologies as older Dynamo releases deploy them: contracts per release range.

The 0.7/0.8 era (ai-dynamo 0.7.x-0.8.x with sglang 0.5.4-0.5.6) differs from 1.x in its flags
and in what a card can say:
- the namespace comes from DYN_NAMESPACE (no --namespace flag); requests travel over NATS;
- multimodal serving is a processor component in front of the workers
  (`--multimodal-processor`, `--multimodal-encode-worker`, `--multimodal-worker`); the
  processor tokenizes and is the public model; the encode worker accepts only model names it
  knows (Qwen/Qwen2.5-VL-7B-Instruct);
- cards carry no topology fields (worker_type, needs), so those are declared empty;
- no rerank, encode-mode or diffusion workers.

The contract that Dynamo #4486 broke, for this era: each of the three multimodal init functions
(encode worker, worker, prefill worker) registers a card, internal (not advertised to clients);
the processor alone registers the public chat model. Nothing here says which release keeps it:
`python -m harness history` finds out by running each.
"""

from __future__ import annotations

from harness.model.contract import CHAT_COMPLETIONS, EMBEDDING, EMPTY, ExpectedCard
from harness.model.topology import Era, WorkerSpec

ERA_0_7 = ">=0.7,<0.9"
# The request plane of each part of the era: 0.7 serves over NATS only; 0.8 added the TCP
# plane (DYN_REQUEST_PLANE) and made it the default.
_PLANES = ((">=0.7,<0.8", "nats"), (">=0.8,<0.9", "tcp"))
_VL_NAME = "Qwen/Qwen2.5-VL-7B-Instruct"
_VL_FLAGS = ("--chat-template", "qwen2-vl")
# Internal: not advertised (model type Empty); what it takes as input was not fixed then.
_INTERNAL = ExpectedCard(EMPTY, None, "", (), public=False)
_MM_REQUESTS = ("chat-image", "chat-image-stream")


def _worker(
    role: str, component: str, model: str, card: ExpectedCard | None, *flags: str, path: str
) -> WorkerSpec:
    return WorkerSpec(
        role=role, flags=flags, model=model, component=component, card=card, start_paths=(path,)
    )


_PROCESSOR = _worker(
    "mm-processor",
    "processor",
    "vision-language",
    ExpectedCard(CHAT_COMPLETIONS, "Text", "", ()),
    "--multimodal-processor",
    *_VL_FLAGS,
    path="init_multimodal_processor",
)
_ENCODER = _worker(
    "mm-encoder",
    "encoder",
    "vision-language",
    _INTERNAL,
    "--multimodal-encode-worker",
    *_VL_FLAGS,
    path="init_multimodal_encode_worker",
)


def _mm_worker(role: str, component: str, path: str, *mode: str) -> WorkerSpec:
    return _worker(
        role,
        component,
        "vision-language",
        _INTERNAL,
        "--multimodal-worker",
        *_VL_FLAGS,
        "--skip-tokenizer-init",
        *mode,
        path=path,
    )


def _era(*workers: WorkerSpec, **more: object) -> tuple[Era, ...]:
    """The era's declaration, once per request-plane range."""
    return tuple(
        Era(releases, workers=workers, namespace_flag=False, request_plane=plane, **more)  # type: ignore[arg-type]
        for releases, plane in _PLANES
    )


AGGREGATED_ERAS = _era(
    _worker(
        "worker",
        "backend",
        "text",
        ExpectedCard(CHAT_COMPLETIONS, "Tokens", "", ()),
        "--skip-tokenizer-init",
        path="init",
    )
)
EMBEDDING_ERAS = _era(
    _worker(
        "embedding",
        "backend",
        "embedding",
        ExpectedCard(EMBEDDING, "Text", "", ()),
        "--embedding-worker",
        path="init_embedding",
    )
)
MM_ENCODE_PD_ERAS = _era(
    _PROCESSOR,
    _ENCODER,
    _mm_worker("mm-worker", "backend", "init_multimodal_worker"),
    requests=_MM_REQUESTS,
    served_model_name=_VL_NAME,
)
MM_ENCODE_P_D_ERAS = _era(
    _PROCESSOR,
    _ENCODER,
    _mm_worker(
        "mm-prefill",
        "prefill",
        "init_multimodal_prefill_worker",
        "--disaggregation-mode",
        "prefill",
    ),
    _mm_worker("mm-decode", "backend", "init_multimodal_worker", "--disaggregation-mode", "decode"),
    requests=_MM_REQUESTS,
    served_model_name=_VL_NAME,
)
RERANK_ERAS = (Era(ERA_0_7, unsupported="no rerank worker before 0.9"),)
DIFFUSION_ERAS = (Era(ERA_0_7, unsupported="no diffusion workers before 0.9"),)
