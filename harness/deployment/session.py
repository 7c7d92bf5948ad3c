"""What all deployments of a test session share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from discovery_harness.deployment.options import Settings
from discovery_harness.deployment.prestart import Prestarts
from discovery_harness.deployment.stops import BackgroundStops
from discovery_harness.discovery.observer import DiscoveryObserver
from discovery_harness.processes.infra import Endpoints
from discovery_harness.runtime.frontend import Frontend
from discovery_harness.runtime.spawn import Zygote


@dataclass
class Session:
    """What all deployments of a test session share."""

    endpoints: Endpoints
    frontend: Frontend
    observer: DiscoveryObserver
    models: Callable[[str, str], str]  # (topology, asset key) -> model path or HF name
    workdir: Path
    settings: Settings
    scratch: Path  # short private TMPDIR root: sglang's IPC socket paths must fit 107 bytes
    gpu_share: tuple[str, ...] = ()  # GPU tier: this run's GPUs (disjoint per xdist worker)
    progress: Callable[[str], None] | None = None  # where live start-up lines go, if anywhere
    progress_heartbeat_s: float = 30.0
    spawner: Zygote | None = None  # CPU tier: the worker template; None: fresh processes
    stops: BackgroundStops = field(default_factory=BackgroundStops)
    prestarts: Prestarts[Any] = field(default_factory=Prestarts)  # started ahead of their tests

    def __repr__(self) -> str:
        """Short: a failing test's traceback shows its fixtures' values."""
        return f"<harness session: etcd {self.endpoints.etcd}, {self.settings.tier} tier>"

    @property
    def hf_home(self) -> Path:
        """CPU tier: one private, empty Hugging Face home for every worker of the session: the
        worker template's (huggingface_hub reads it at import; under xdist the run's), else
        the session's own."""
        return self.spawner.hf_home if self.spawner is not None else self.scratch / "hf"
