"""How many xdist workers `-n auto` starts in a run of the harness.

xdist's own answer is one per CPU core. The harness's tests spend about a third of their time
waiting on the processes they start (a worker's start, Dynamo's graceful stop, a card grace),
so on the CPU tier one worker more than the cores keeps the cores busy: on a 2-core machine the
README's run took 50 s under 3 workers against 54 s under 2 and 51 s under 4, one after the
other (bench/RESULTS.md has the benchmark's figures). Each xdist worker runs its own etcd,
NATS and frontend and deploys its own workers, so the machine's free memory caps the count.
On the GPU tier one worker: each xdist worker gets a disjoint share of the GPUs, and a layout
wider than its share is skipped, so one session holding every GPU runs every layout that fits
the machine (`-n N` splits them when the selected layouts are narrow). `--tier auto` takes the
GPU tier only where the workers' stack can use a GPU (the same probe the session reads).

Only for a run that asks for the harness (plugin.scope); another suite keeps xdist's answer,
and so does PYTEST_XDIST_AUTO_NUM_WORKERS or `-n logical`.
"""

from __future__ import annotations

import os

import psutil
import pytest

from discovery_harness.plugin import options, scope
from discovery_harness.runtime import dynamo_env, gpu_probe, gpus
from discovery_harness.runtime.tier import TIERS, TierPolicy

# One xdist worker's share at its peak: the test process, etcd, NATS, the session's frontend
# and a deployment's workers (the run's one template aside; kept with a margin).
GIB_PER_WORKER = 2.0
XDIST_OWN_COUNT = "PYTEST_XDIST_AUTO_NUM_WORKERS"


def auto_workers(asked: TierPolicy | None, usable_gpus: int, cpus: int, free_gib: float) -> int:
    """The number of xdist workers for `-n auto`: one where the GPU tier runs (`asked` None:
    auto, which takes it where a GPU is usable), else the cores plus one, as many as the free
    memory holds; at least one."""
    on_gpus = asked.gpus if asked is not None else usable_gpus > 0
    if on_gpus:
        return 1
    by_memory = int(free_gib // GIB_PER_WORKER)
    return max(1, min(cpus + 1, by_memory))


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get(XDIST_OWN_COUNT) or config.option.numprocesses == "logical":
        return None
    if not scope.asked_by_command_line(config, options.own_flags(config)):
        return None
    asked = TIERS.get(str(options.value(config, "tier")))
    return auto_workers(
        asked,
        _usable_gpus(config) if asked is None else 0,
        len(os.sched_getaffinity(0)),
        psutil.virtual_memory().available / 2**30,
    )


def _usable_gpus(config: pytest.Config) -> int:
    """What auto's tier choice reads: the GPUs the workers' stack can use (no probe, and no
    CUDA init, where none is visible; the session's own probe then finds the answer cached)."""
    if not gpus.visible_gpus():
        return 0
    try:
        python = dynamo_env.resolve(options.value(config, "dynamo_env")).python
    except ValueError:
        return 0  # the session says why, as a usage error
    return len(gpu_probe.probe(python).usable)
