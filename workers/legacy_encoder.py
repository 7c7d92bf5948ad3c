"""CPU stand-in for sglang 0.5.9-0.5.18's MMEncoder (`sglang.srt.disaggregation.encode_server`),
which ai-dynamo 1.0-1.5's encode worker builds and calls as `await encoder._encode(...)`.

Generations of that class: sglang 0.5.9 `_encode(mm_items)` -> (grid, embeddings); from
0.5.10 `_encode(mm_items, modality)` -> (grid, embeddings, aux_data); 0.5.16 adds
`log_metrics`, 0.5.18 a constructor `gpu_id`. `for_real` picks the one the installed class
has, so `python -m discovery_harness_workers.drift` compares like with like. The embeddings are
zeros, one row
per merged patch of a fixed 1x4x4 grid per item.
"""

from __future__ import annotations

import inspect
from typing import Any

IMAGE_GRID_THW = (1, 4, 4)


class CpuLegacyMMEncoder:
    """What the encode worker reads: `.server_args`, `.model_config`, `_encode`."""

    def __init__(
        self,
        server_args: Any,
        schedule_path: Any = None,
        dist_init_method: Any = None,
        rank: int = 0,
    ) -> None:
        from sglang.srt.configs.model_config import ModelConfig

        self.server_args = server_args
        self.rank = rank
        self.model_config = ModelConfig.from_server_args(server_args)
        hf = self.model_config.hf_config
        self.hidden_size = hf.get_text_config().hidden_size
        self.merge = getattr(getattr(hf, "vision_config", None), "spatial_merge_size", 2)
        self.model_type = getattr(hf, "model_type", "")

    def _grid_and_embeddings(self, mm_items: Any) -> tuple[Any, Any]:
        import torch

        count = len(mm_items) if isinstance(mm_items, list | tuple) else 1
        grid = torch.tensor([IMAGE_GRID_THW] * count)
        rows = count * int(torch.prod(torch.tensor(IMAGE_GRID_THW))) // (self.merge**2)
        return grid, torch.zeros(rows, self.hidden_size, dtype=torch.float16)


class CpuMMEncoder09(CpuLegacyMMEncoder):
    """sglang 0.5.9: `_encode(mm_items)` -> (grid, embeddings)."""

    async def _encode(self, mm_items: Any) -> Any:
        return self._grid_and_embeddings(mm_items)


class CpuMMEncoder010(CpuLegacyMMEncoder):
    """sglang 0.5.10 and later: `_encode(mm_items, modality)` -> (grid, embeddings, aux)."""

    async def _encode(self, mm_items: Any, modality: Any) -> Any:
        grid, embeddings = self._grid_and_embeddings(mm_items)
        return grid, embeddings, {}


class CpuMMEncoder016(CpuMMEncoder010):
    """sglang 0.5.16: `_encode(..., log_metrics)`."""

    async def _encode(self, mm_items: Any, modality: Any, log_metrics: bool = True) -> Any:
        return await super()._encode(mm_items, modality)


class CpuMMEncoder018(CpuMMEncoder016):
    """sglang 0.5.18: also a `gpu_id` to build on."""

    def __init__(
        self,
        server_args: Any,
        schedule_path: Any = None,
        dist_init_method: Any = None,
        rank: int = 0,
        gpu_id: Any = None,
    ) -> None:
        super().__init__(server_args, schedule_path, dist_init_method, rank)


def for_real(real: Any) -> type[Any]:
    """The stand-in generation matching the installed MMEncoder's signatures."""
    encode = inspect.signature(real._encode).parameters
    if "gpu_id" in inspect.signature(real.__init__).parameters:
        return CpuMMEncoder018
    if "log_metrics" in encode:
        return CpuMMEncoder016
    return CpuMMEncoder010 if "modality" in encode else CpuMMEncoder09
