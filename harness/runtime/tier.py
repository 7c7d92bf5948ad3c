"""Which tier a run uses: `--tier auto` takes the GPU tier only where it can really run.

The GPU tier needs CUDA GPUs and a CUDA build of sglang (its kernels package, `sgl_kernel`,
and a torch built with CUDA). Everything is looked up without importing torch or sglang, so
the choice costs nothing on a laptop.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from harness.runtime.gpus import visible_gpus

CPU, GPU = "cpu", "gpu"
TIERS = (CPU, GPU)


@dataclass(frozen=True)
class TierChoice:
    tier: str
    reason: str

    def describe(self) -> str:
        return f"tier {self.tier}: {self.reason}"


def torch_cuda_version() -> str | None:
    """The CUDA version torch was built with, read from torch/version.py (no import)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    version_file = Path(spec.origin).parent / "version.py"
    try:
        text = version_file.read_text()
    except OSError:
        return None
    match = re.search(r"^cuda\b[^=]*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return match.group(1) if match else None


def sglang_cuda_build() -> str | None:
    """Why sglang cannot run on CUDA here, or None when it can."""
    if importlib.util.find_spec("sglang") is None:
        return "sglang is not installed"
    if importlib.util.find_spec("sgl_kernel") is None:
        return "sglang has no CUDA kernels here (sgl_kernel is not installed)"
    if torch_cuda_version() is None:
        return "torch is a CPU-only build"
    return None


def choose(requested: str) -> TierChoice:
    if requested in TIERS:
        return TierChoice(requested, "asked for with --tier")
    if requested != "auto":
        raise ValueError(f"--tier must be auto, cpu or gpu, not {requested!r}")
    gpus = visible_gpus()
    if not gpus:
        return TierChoice(CPU, "auto: no CUDA GPU visible (CUDA_VISIBLE_DEVICES / nvidia-smi)")
    missing = sglang_cuda_build()
    if missing:
        return TierChoice(CPU, f"auto: {len(gpus)} GPU(s) visible but {missing}")
    kernel = importlib.metadata.version("sgl-kernel") if _has_dist("sgl-kernel") else "?"
    return TierChoice(
        GPU,
        f"auto: {len(gpus)} GPU(s) visible ({','.join(gpus)}), sgl_kernel {kernel}, "
        f"torch built with CUDA {torch_cuda_version()}",
    )


def _has_dist(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
