"""Which GPUs this run may use, and which of them each worker of a layout gets.

The runner's own `CUDA_VISIBLE_DEVICES` is honoured: it names the GPUs this run owns. Under
pytest-xdist each worker process takes a disjoint slice of them, so two deployments never
share a GPU by accident; a layout is then mapped onto that slice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

from discovery_harness.model.topology import Placement


class NotEnoughGpus(RuntimeError):
    """The layout needs more GPUs than this run's share holds."""


def visible_gpus(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """GPU ids this run may use: CUDA_VISIBLE_DEVICES when set, else what nvidia-smi lists."""
    env = os.environ if env is None else env
    if "CUDA_VISIBLE_DEVICES" in env:
        ids = [part.strip() for part in env["CUDA_VISIBLE_DEVICES"].split(",") if part.strip()]
        # CUDA stops at the first invalid entry; "-1" is the usual way to hide every GPU.
        valid = []
        for gpu in ids:
            if gpu.startswith("-"):
                break
            valid.append(gpu)
        return tuple(valid)
    return _nvidia_smi_indexes()


def _nvidia_smi_indexes() -> tuple[str, ...]:
    return tuple(row[0] for row in nvidia_smi_query("index"))


def nvidia_smi_query(*fields: str) -> list[list[str]]:
    """Rows of `nvidia-smi --query-gpu=FIELDS` (no units); [] without nvidia-smi or a driver."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run(
            [smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [[cell.strip() for cell in line.split(",")] for line in out.splitlines() if line.strip()]


def total_memory_gib(ids: tuple[str, ...]) -> dict[str, float]:
    """Each GPU's total memory in GiB, by the id CUDA_VISIBLE_DEVICES uses (an index or a
    UUID); a GPU nvidia-smi does not list is left out."""
    memory: dict[str, float] = {}
    for index, uuid, mib in nvidia_smi_query("index", "uuid", "memory.total"):
        try:
            gib = float(mib) / 1024
        except ValueError:
            continue
        memory[index] = memory[uuid] = gib
    return {gpu: memory[gpu] for gpu in ids if gpu in memory}


def xdist_position(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(this xdist worker's index, how many there are); (0, 1) without xdist."""
    env = os.environ if env is None else env
    worker = env.get("PYTEST_XDIST_WORKER", "")
    count = int(env.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    return index, max(count, 1)


def session_of_its_own(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a pytest session started from inside another one: without
    pytest-xdist's worker variables (the inner session would otherwise take only its "share"
    of the GPUs, as if it were a sibling worker) and without the outer PYTEST_CURRENT_TEST."""
    env = os.environ if env is None else env
    return {
        name: value
        for name, value in env.items()
        if not name.startswith("PYTEST_XDIST_") and name != "PYTEST_CURRENT_TEST"
    }


def share(visible: tuple[str, ...], index: int, count: int) -> tuple[str, ...]:
    """This worker's disjoint, contiguous slice of the visible GPUs (may be empty)."""
    per_worker = len(visible) // count
    return visible[index * per_worker : (index + 1) * per_worker]


def memory_needed_gib(placement: Placement) -> dict[int, float]:
    """The GPU memory the layout declares per logical GPU: the sum of its workers' needs."""
    needed: dict[int, float] = {}
    for worker in placement.workers:
        needed[worker.gpu] = needed.get(worker.gpu, 0.0) + (worker.vram_gib or 0.0)
    return needed


def does_not_fit(placement: Placement, memory_gib: tuple[float | None, ...]) -> str | None:
    """Why the layout cannot run on GPUs of these total memories (its logical GPU i on the
    i-th), or None when it fits or a memory is unknown (then sglang's own check decides)."""
    for gpu, needed in sorted(memory_needed_gib(placement).items()):
        have = memory_gib[gpu] if gpu < len(memory_gib) else None
        if have is not None and needed > have:
            return (
                f"needs ~{needed:.1f} GiB on its GPU {gpu}; the GPU it would get has {have:.1f} GiB"
            )
    return None


def assign(placement: Placement, gpus: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Physical GPU ids per role: the layout's logical index i is the share's i-th GPU."""
    if placement.gpus > len(gpus):
        raise NotEnoughGpus(
            f"the {placement.name} layout needs {placement.gpus} GPU(s); this run's share is "
            f"{len(gpus)} ({','.join(gpus) or 'none'})"
        )
    return {w.role: (gpus[w.gpu],) for w in placement.workers}
