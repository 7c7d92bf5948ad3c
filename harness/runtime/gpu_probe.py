"""One probe says which GPUs this run may use: the driver, torch's CUDA build, sglang's CUDA
kernels (looked up, not imported) and a CUDA init, all read in the workers' interpreter.

`--tier auto`'s choice, `--tier gpu`'s check before anything starts, the session's GPU count
and the GPU job's preflight all read the same `GpuProbe`. A GPU the driver shows but the
Python stack cannot use (a CPU build of torch, a driver too old for torch's CUDA, a CUDA init
that fails) is the environment's fault: one line naming what is missing, before any worker
starts, never workers that exit and read as topologies breaking their contract.

The CUDA init runs in the workers' own interpreter (the release environment's under
`--dynamo-env`), in a subprocess: importing torch here would cost every run its import time.
Standard library only (the GPU job's preflight runs it before anything is installed).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from discovery_harness.runtime import gpus

# The oldest Linux driver each CUDA major release runs on (NVIDIA's CUDA toolkit release notes,
# minor-version compatibility); Dynamo's docs list driver >= 580 for its CUDA 13 images.
MIN_DRIVER = {11: (450, 80, 2), 12: (525, 60, 13), 13: (580, 65, 6)}
INIT_TIMEOUT_S = 120.0
# The CUDA init's answer given instead of asked (JSON, as _INIT prints it): the GPU tier's own
# checks, rehearsed where there is no GPU (the harness's tests).
GIVEN_ENV = "HARNESS_CUDA_INIT"
# What the workers' interpreter reports: torch's version, its CUDA build, the devices a CUDA
# init finds, and the init's error (one line), as JSON.
_INIT = """
import importlib.metadata, importlib.util, json
try:
    import torch
except Exception as error:
    print(json.dumps({"torch": None, "error": f"torch does not import: {error}"}))
    raise SystemExit(0)
found = {"torch": torch.__version__, "cuda": torch.version.cuda, "count": 0, "error": None}
found["sglang"] = importlib.util.find_spec("sglang") is not None
found["sgl_kernel"] = None
if importlib.util.find_spec("sgl_kernel") is not None:  # looked up, not imported: no driver
    try:
        found["sgl_kernel"] = importlib.metadata.version("sgl-kernel")
    except importlib.metadata.PackageNotFoundError:
        found["sgl_kernel"] = "installed"
if torch.version.cuda:
    try:
        torch.cuda.init()
        found["count"] = torch.cuda.device_count()
    except Exception as error:
        found["error"] = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
print(json.dumps(found))
"""


@dataclass(frozen=True)
class GpuProbe:
    visible: tuple[str, ...]  # what CUDA_VISIBLE_DEVICES / nvidia-smi name
    usable: tuple[str, ...]  # those the workers' stack can use
    problem: str | None  # why the visible GPUs cannot be used (one line), else None
    torch: str | None = None
    cuda: str | None = None
    sgl_kernel: str | None = None  # sglang's CUDA kernels in the workers' interpreter

    def describe(self) -> str:
        if not self.visible:
            return "no CUDA GPU visible (CUDA_VISIBLE_DEVICES / nvidia-smi)"
        if self.problem:
            return f"{len(self.visible)} GPU(s) visible but {self.problem}"
        return (
            f"{len(self.usable)} GPU(s) usable ({','.join(self.usable)}), sgl_kernel "
            f"{self.sgl_kernel}, torch {self.torch} built with CUDA {self.cuda}"
        )


def driver_problem(driver: str | None, cuda: str | None) -> str | None:
    """Why this NVIDIA driver cannot run this CUDA build, or None (also when either is
    unknown: no driver at all is the GPU check's to report)."""
    if not driver or not cuda:
        return None
    need = MIN_DRIVER.get(int(cuda.split(".")[0]))
    have = tuple(int(part) for part in re.findall(r"\d+", driver)[:3])
    if need is None or have >= need:
        return None
    return (
        f"driver {driver} is older than CUDA {cuda} (torch's build) needs: "
        f"{'.'.join(map(str, need))} or newer"
    )


def cuda_init(python: str) -> dict[str, object]:
    """The workers' interpreter's answer to a CUDA init (see _INIT), asked once per
    interpreter and set of visible devices: the tier's choice, the preflight's driver and GPU
    checks all read it."""
    if os.environ.get(GIVEN_ENV):
        return json.loads(os.environ[GIVEN_ENV])
    return dict(_asked(python, os.environ.get("CUDA_VISIBLE_DEVICES")))


@functools.cache
def _asked(python: str, visible: str | None) -> dict[str, object]:
    """`visible` keys the answer only: the subprocess inherits it with the environment."""
    try:
        done = subprocess.run(
            [python, "-c", _INIT], capture_output=True, text=True, timeout=INIT_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError) as error:
        return {"torch": None, "error": f"{python} did not answer: {error}"}
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"torch": None, "error": f"{python} exited {done.returncode}: {tail}"}


def probe(python: str | None = None) -> GpuProbe:
    """The visible GPUs, and whether the stack of `python` (default: this one) can use them."""
    visible = gpus.visible_gpus()
    if not visible:
        return GpuProbe((), (), None)
    python = python or sys.executable
    found = cuda_init(python)
    torch, cuda = found.get("torch"), found.get("cuda")
    names = f"GPU(s) {','.join(visible)}"
    if torch is None:
        problem = f"{names}: {found.get('error')}"
    elif not cuda:
        problem = (
            f"{names}: torch {torch} here is a CPU-only build, no worker could use them "
            f"({python}); install a CUDA build of torch, or use --tier cpu"
        )
    else:
        rows = gpus.nvidia_smi_query("driver_version")
        too_old = driver_problem(rows[0][0] if rows else None, str(cuda))
        if too_old:
            problem = f"{names}: {too_old}"
        elif found.get("error") or not found.get("count"):
            why = found.get("error") or "it finds no device"
            problem = f"{names}: a CUDA init with torch {torch} (CUDA {cuda}) fails: {why}"
        elif not found.get("sglang", True) or not found.get("sgl_kernel", "?"):
            missing = "sglang" if not found.get("sglang", True) else "sgl_kernel"
            problem = (
                f"{names}: sglang has no CUDA kernels in {python} ({missing} is not "
                "installed); install its GPU build (docs/gpu.md), or use --tier cpu"
            )
        else:
            usable = visible[: int(found["count"])]  # type: ignore[call-overload]
            kernel = str(found.get("sgl_kernel") or "?")
            return GpuProbe(visible, usable, None, str(torch), str(cuda), kernel)
    return GpuProbe(visible, (), problem, str(torch) if torch else None, str(cuda or "") or None)
