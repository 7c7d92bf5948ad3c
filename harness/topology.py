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
    model: str  # asset key: "text", "vision-language", "diffusion"
    component: str  # the discovery component its generate endpoint lives in
    card: ExpectedCard


@dataclass(frozen=True)
class Topology:
    name: str
    workers: tuple[WorkerSpec, ...]
    requests: tuple[str, ...]  # request kinds, see harness.requests
    marks: tuple[str, ...] = ()  # pytest markers beyond the common ones
    timeout_s: int = 180  # ~3x the measured CPU-tier duration, rounded up
    known_violations: tuple[KnownViolation, ...] = ()

    @property
    def public_workers(self) -> tuple[WorkerSpec, ...]:
        return tuple(w for w in self.workers if w.card.public)

    def worker(self, role: str) -> WorkerSpec:
        return next(w for w in self.workers if w.role == role)
