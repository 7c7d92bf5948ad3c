"""The shape of a topology declaration: workers, their contracts, and the requests to send."""

from __future__ import annotations

from dataclasses import dataclass

from harness.contract import ExpectedCard


@dataclass(frozen=True)
class KnownViolation:
    """A violation a Dynamo release is known to show for a topology: reported, not failed.

    Like a conformance profile: the release declares what it does not (yet) meet, so the
    suite stays green on it while every report still shows the finding.
    """

    kind: str
    dynamo_versions: tuple[str, ...]
    reason: str

    def applies_to(self, dynamo_version: str) -> bool:
        return dynamo_version in self.dynamo_versions


@dataclass(frozen=True)
class WorkerSpec:
    role: str  # names the worker in every message
    flags: tuple[str, ...]  # dynamo.sglang argv besides model, name, namespace, ports
    model: str  # asset key: "text", "embedding", "rerank", "vision-language", "image", "video"
    component: str  # the discovery component its generate endpoint lives in
    card: ExpectedCard


@dataclass(frozen=True)
class WorkerPlacement:
    """Where one worker runs in a GPU layout, and the caps that let it share its GPU."""

    role: str
    gpu: int  # logical GPU index within the deployment's share of the visible GPUs
    flags: tuple[str, ...] = ()  # memory / KV / batch caps for this layout
    vram_gib: float | None = None  # estimate; None: takes what sglang's static fraction gives
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Placement:
    """One way to lay a topology on GPUs. The 1-GPU layout is the packed one; the CPU tier
    runs its command lines, so every commit exercises the flags GPU runners use."""

    gpus: int
    workers: tuple[WorkerPlacement, ...]
    start_order: tuple[str, ...] = ()  # GPU tier: roles started one at a time, in this order
    start_timeout_s: int = 360  # GPU tier: every worker serving and registered within this

    @property
    def name(self) -> str:
        return f"{self.gpus}gpu"

    @property
    def timeout_s(self) -> int:
        """The GPU-tier scenario timeout: the start plus listing, requests and teardown."""
        return self.start_timeout_s + 180

    def of(self, role: str) -> WorkerPlacement:
        return next(w for w in self.workers if w.role == role)


@dataclass(frozen=True)
class GpuProfile:
    """How the GPU tier runs a topology: its layouts, and whether it is nightly-only there."""

    placements: tuple[Placement, ...]
    nightly: bool = False  # too big or slow for every change on GPU runners

    @property
    def packed(self) -> Placement:
        return next(p for p in self.placements if p.gpus == 1)


@dataclass(frozen=True)
class Topology:
    name: str
    workers: tuple[WorkerSpec, ...]
    requests: tuple[str, ...]  # request kinds, see harness.requests
    gpu: GpuProfile
    marks: tuple[str, ...] = ()  # pytest markers beyond the common ones
    timeout_s: int = 180  # CPU tier: ~3x the measured duration, rounded up
    known_violations: tuple[KnownViolation, ...] = ()

    @property
    def public_workers(self) -> tuple[WorkerSpec, ...]:
        return tuple(w for w in self.workers if w.card.public)

    def worker(self, role: str) -> WorkerSpec:
        return next(w for w in self.workers if w.role == role)


@dataclass(frozen=True)
class Scenario:
    """A topology in one GPU layout: what one test item deploys."""

    topology: Topology
    placement: Placement

    @classmethod
    def packed(cls, topology: Topology) -> Scenario:
        return cls(topology, topology.gpu.packed)
