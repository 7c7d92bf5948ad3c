"""The one start-up sequence of a CPU-tier worker process, before any of Dynamo's code runs.

Every start takes it: a fresh worker (`python -m discovery_harness_workers.cpu_sglang`), a worker
forked from
the template (the template runs it while it pre-imports, without a fault; the forked child
runs it again through the same launcher, with its own), and a python process a worker spawns
itself (the gateway's children, through workers/startup/sitecustomize.py). Each step is
idempotent, so running it twice in one process changes nothing.
"""

from __future__ import annotations


def prepare(*, with_fault: bool = True) -> None:
    """torchvision's CPU shim, the installed release's CPU stand-ins
    (discovery_harness_workers.release_stand_ins
    says which), then the fault the environment names (self-tests), if any."""
    from discovery_harness_workers import faults, release_stand_ins, torchvision_shim

    torchvision_shim.apply()
    release_stand_ins.install(release_stand_ins.choice_for(release_stand_ins.installed_release()))
    if with_fault:
        faults.install_from_environment()
