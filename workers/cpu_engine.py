"""CPU stand-ins for what of sglang needs a GPU: the scheduler, the vision encoder and the
diffusion pipeline. Nothing else is replaced.

* `CpuEngine` subclasses the real `sglang.Engine` and keeps all of it (its `__init__`,
  sglang's own launch sequence, the real `TokenizerManager` and `DetokenizerManager`) but
  the two hooks that would start processes: the scheduler processes become the in-process
  stand-in of `discovery_harness_workers.cpu_scheduler`, answering on the scheduler's own
  ZMQ sockets, and the detokenizer process becomes the real DetokenizerManager in a thread.
* `CpuMMEncoder` stands in for the vision encoder with fixed-size outputs (the diffusion
  pipeline's stand-in, `CpuDiffGenerator`, is in `discovery_harness_workers.cpu_diffusion`).

`tests/test_stand_in_drift.py` fails when the installed sglang's names or signatures that
these rely on change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import torch
from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.entrypoints.engine import Engine
from sglang.srt.server_args import ServerArgs

from discovery_harness_workers.cpu_scheduler import SchedulerCut

logger = logging.getLogger("discovery_harness_workers.cpu_engine")

IMAGE_GRID_THW = (1, 4, 4)  # one frame of 4x4 patches -> 4 tokens after a 2x2 merge


class CpuEngine(SchedulerCut, Engine):
    """sglang's Engine whose scheduler and detokenizer run inside the worker's process."""


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
