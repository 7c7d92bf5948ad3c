"""CPU stand-ins for the three sglang classes that need a GPU. Nothing else is replaced.

* `CpuEngine` subclasses the real `sglang.Engine`: the real `async_generate` /
  `async_encode` stay (Dynamo inspects their signatures and calls them); only `__init__`
  (which would launch scheduler processes on a GPU) and `shutdown` are replaced. It still
  runs sglang's own port and model-config resolution.
* `CpuTokenizerManager` subclasses the real `TokenizerManager` without its `__init__` (no
  ZMQ to schedulers); `discovery_harness_workers.stand_in_generation` answers `generate_request`
with
  deterministic tokens, embeddings or rerank scores, in the shapes sglang streams.
* `CpuMMEncoder` stands in for the vision encoder with fixed-size outputs (the diffusion
  pipeline's stand-in, `CpuDiffGenerator`, is in `discovery_harness_workers.cpu_diffusion`).

`tests/test_stand_in_drift.py` fails when the installed sglang's names or signatures that
these rely on change.
"""

from __future__ import annotations

import asyncio
import logging
import types
from dataclasses import dataclass, field
from typing import Any

import torch
from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.entrypoints.engine import Engine
from sglang.srt.managers.tokenizer_manager import TokenizerManager
from sglang.srt.runtime_context import publish
from sglang.srt.server_args import PortArgs, ServerArgs
from transformers import AutoTokenizer

from discovery_harness_workers.stand_in_generation import MAX_TOTAL_TOKENS, StandInGeneration

logger = logging.getLogger("discovery_harness_workers.cpu_engine")

IMAGE_GRID_THW = (1, 4, 4)  # one frame of 4x4 patches -> 4 tokens after a 2x2 merge


def _resolve_server_args(server_args: ServerArgs) -> None:
    """What the real Engine does in-process before it spawns schedulers: resolve the args
    once and publish them as the process's runtime context (prefill warm-up reads it)."""
    server_args.resolve_once()
    publish(server_args, role="tokenizer")


class CpuTokenizerManager(StandInGeneration, TokenizerManager):
    """The real TokenizerManager class, fed by an in-process generator instead of schedulers."""

    def __init__(self, server_args: ServerArgs, model_config: ModelConfig) -> None:
        self.server_args = server_args
        self.model_config = model_config
        self.context_len = model_config.context_len
        self.tokenizer = AutoTokenizer.from_pretrained(
            server_args.tokenizer_path or server_args.model_path
        )
        self.processor = None
        self.mm_processor = None
        self.is_generation = model_config.is_generation
        self.num_reserved_tokens = 0
        self.is_pause = False
        self.is_pause_cond = asyncio.Condition()
        self.initial_weights_loaded = True
        self.startup_time = 0.0
        self._subprocess_watchdog = None
        self.init_stand_in_generation()
        self.init_stand_in_lora()


def _kv_pool_tokens(server_args: Any) -> int:
    """The KV pool sglang's scheduler reports: its profiled size (a constant here) capped by
    --max-total-tokens and aligned to the page size, as sglang 0.5.21's
    mem_cache/kv_cache_configurator.py (_apply_token_constraints) does."""
    cap = getattr(server_args, "max_total_tokens", None)
    tokens = min(MAX_TOTAL_TOKENS, cap) if cap else MAX_TOTAL_TOKENS
    page = int(getattr(server_args, "page_size", 1) or 1)
    return tokens // page * page


class CpuEngine(Engine):
    """sglang's Engine with the scheduler launch replaced by the in-process stand-in."""

    def __init__(self, **kwargs: Any) -> None:
        server_args = kwargs.get("server_args") or self.server_args_class(**kwargs)
        self.server_args = server_args
        self.tokenizer_manager = None
        _resolve_server_args(server_args)
        self.port_args = PortArgs.init_new(server_args)
        model_config = ModelConfig.from_server_args(server_args)
        self.tokenizer_manager = CpuTokenizerManager(server_args, model_config)
        self.template_manager = None
        self._scheduler_init_result = types.SimpleNamespace(
            scheduler_infos=[
                {
                    "max_total_num_tokens": _kv_pool_tokens(server_args),
                    "max_req_input_len": model_config.context_len,
                }
            ],
            all_child_pids=[],
        )
        self._weight_cache_daemon_procs: list[Any] = []
        self.send_to_rpc = None
        self.loop = self._ensure_event_loop()
        logger.info("CpuEngine ready for %s (no scheduler processes)", server_args.model_path)

    @staticmethod
    def _init_tokenizer_worker(
        server_args: ServerArgs, port_args: PortArgs, scheduler_info: dict[str, Any]
    ) -> tuple[CpuTokenizerManager, None]:
        """A gateway child's tokenizer: the real `Engine.attach_tokenizer_worker` reads the
        parent's args from shared memory, publishes them, and calls this for the one part
        that would connect to the parent's scheduler router."""
        model_config = ModelConfig.from_server_args(server_args)
        return CpuTokenizerManager(server_args, model_config), None

    def shutdown(self) -> None:
        """Nothing was launched, so nothing to stop."""


@dataclass
class _PreprocessResult:
    grid_thw: torch.Tensor


@dataclass
class _EncodeContext:
    preprocess_result: _PreprocessResult
    num_tokens: int
    aux_data: dict[str, Any] = field(default_factory=dict)


class CpuMMEncoder:
    """Stands in for sglang's MMEncoder: fixed-size image embeddings, no vision tower."""

    def __init__(
        self,
        server_args: ServerArgs,
        schedule_path: Any = None,
        dist_init_method: str | None = None,
        rank: int = 0,
        gpu_id: int | None = None,
    ) -> None:
        self.server_args = server_args
        self.rank = rank
        self.model_config = ModelConfig.from_server_args(server_args)
        hf = self.model_config.hf_config
        self.vision_config = getattr(hf, "vision_config", None)
        self.model_type = getattr(hf, "model_type", "")
        # Qwen3-VL nests the language model's size in text_config; Qwen2-VL keeps it on top.
        self.hidden_size = hf.get_text_config().hidden_size
        self.merge = getattr(self.vision_config, "spatial_merge_size", 2)

    def supports_modality(self, modality: Any) -> bool:
        return True

    async def _prepare_encode_context(
        self,
        requests: list[dict],
        modality: Any,
        *,
        use_global_cache: bool,
        is_health_check: bool = False,
    ) -> _EncodeContext:
        items = [item for req in requests for item in req.get("mm_items", [])]
        grid = torch.tensor([IMAGE_GRID_THW] * len(items))
        per_item = int(torch.prod(torch.tensor(IMAGE_GRID_THW))) // (self.merge**2)
        return _EncodeContext(_PreprocessResult(grid), num_tokens=per_item * len(items))

    async def _compute_embedding(self, ctx: _EncodeContext, *, keep_on_gpu: bool) -> torch.Tensor:
        return torch.zeros(ctx.num_tokens, self.hidden_size, dtype=torch.float32)
