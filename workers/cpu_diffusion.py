"""The CPU stand-in for sglang's diffusion pipeline (`sglang.multimodal_gen.DiffGenerator`):
small solid-colour frames of the asked size and count. Its own module, with nothing of sglang
imported, because every release from Dynamo 1.0 (sglang 0.5.9 on) calls the same two methods
(`from_pretrained`, `generate(sampling_params_kwargs=...)`) and reads `.frames` of the result;
the drift check compares it with each release's real class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class _GenerationResult:
    frames: list[Any]


class CpuDiffGenerator:
    """Stands in for sglang's DiffGenerator: small solid-colour frames."""

    def __init__(self, **kwargs: Any) -> None:
        self.model_path = kwargs.get("model_path", "")
        self.kwargs = kwargs

    @classmethod
    def from_pretrained(cls, local_mode: bool = True, **kwargs: Any) -> CpuDiffGenerator:
        return cls(**kwargs)

    def generate(
        self,
        sampling_params_kwargs: dict | None = None,
        external_trace_header: dict[str, str] | None = None,
    ) -> Any:
        import numpy as np

        params = dict(sampling_params_kwargs or {})
        count = int(params.get("num_frames") or 1)
        height = int(params.get("height") or 32)
        width = int(params.get("width") or 32)
        frame: Any = np.full((height, width, 3), 200, dtype=np.uint8)
        return _GenerationResult(frames=[frame.copy() for _ in range(count)])

    def shutdown(self) -> None:
        """Nothing to release."""


class CpuDiffGeneratorUntraced(CpuDiffGenerator):
    """sglang 0.5.9-0.5.10's DiffGenerator (Dynamo 1.0-1.1): `generate` takes no trace header
    (0.5.11 added `external_trace_header`)."""

    def generate(self, sampling_params_kwargs: dict | None = None) -> Any:  # type: ignore[override]
        return super().generate(sampling_params_kwargs)
