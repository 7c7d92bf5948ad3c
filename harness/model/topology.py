"""The shape of a topology declaration: workers, their contracts, and the requests to send."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from discovery_harness.model.contract import ExpectedCard

# Which request shapes a topology sends (discovery_harness.serving.shapes): each kind's cheap
# ones, or every one (where the kind is best exercised; the default run keeps its time).
CHEAP_SHAPES, EVERY_SHAPE = "cheap", "every"

# What a worker's /health (the readiness probe Kubernetes reads) must say over its life
# (discovery_harness.judge.health): ready within the registration deadline, never before its
# card, and then until it is stopped; or, for a worker that must not register, 503 notready
# for as long as it lives (measured on 1.6.1: a multi-node follower's generate endpoint never
# serves, and the operator's endpoint-health setting keeps it notready).
READY_AFTER_CARD, STAYS_NOT_READY = "ready-after-card", "stays-not-ready"


@dataclass(frozen=True, kw_only=True)
class KnownWindow:
    """Where a known violation is excused: only what happened within `seconds` after an event
    the deployment recorded (its name, see discovery_harness.model.events). The same violation
    outside
    that window, or with no time to place it, fails like any other."""

    after: str  # e.g. "relisted after restarting prefill"
    seconds: float

    def covers(self, at: tuple[float, ...], events: tuple[float, ...]) -> bool:
        """Every occurrence lies within the window after one of the event's times."""
        return bool(at) and all(
            any(0 <= stamp - start <= self.seconds for start in events) for stamp in at
        )

    def describe(self) -> str:
        return f"within {self.seconds:g} s after '{self.after}'"


@dataclass(frozen=True, kw_only=True)
class KnownViolation:
    """A violation a Dynamo release is known to show for a topology: reported, not failed.

    Like a conformance profile: the release declares what it does not (yet) meet, so the
    suite stays green on it while every report still shows the finding. With a `window`, only
    inside it (an intermittent violation of a measured, cited window); `cites` names the
    upstream threads it matches.
    """

    kind: str
    dynamo_versions: tuple[str, ...]
    reason: str
    window: KnownWindow | None = None
    cites: tuple[str, ...] = ()
    # Only the violations of this request shape (a label like "image[n-2]"); None: any.
    shape: str | None = None

    def applies_to(self, dynamo_version: str) -> bool:
        return dynamo_version in self.dynamo_versions

    def covers(self, kind: str, shape: str | None) -> bool:
        return kind == self.kind and (self.shape is None or shape == self.shape)


@dataclass(frozen=True, kw_only=True)
class WorkerSpec:
    role: str  # names the worker in every message
    flags: tuple[str, ...] = ()  # dynamo.sglang argv besides model, name, namespace, ports
    model: str  # asset key: see discovery_harness.model.assets.ASSET_KEYS
    component: str  # the discovery component its generate endpoint lives in
    # What each registering process of this worker must register; None: this process must
    # not register at all (a multi-node follower, a gateway leader): any instance or card
    # it writes is a violation.
    card: ExpectedCard | None
    # The dynamo.sglang start paths this worker takes (see discovery_harness.judge.coverage): the
    # guard
    # fails when an installed start path is in no worker's list and not exempt.
    start_paths: tuple[str, ...] = ("init_decode",)
    # How many processes of this worker's tree register `card` (a gateway leader's children
    # do, the leader does not): 1 for a plain worker.
    registrants: int = 1
    env: tuple[tuple[str, str], ...] = ()  # set for this worker (both tiers)
    # False: Dynamo picks the request-plane port (processes the worker spawns inherit its
    # environment, so a pinned port would be shared); its keys are then told apart by
    # component instead of by port.
    pin_request_plane: bool = True
    # By the era's design an internal endpoint only its peers call: it serves (instances)
    # but publishes no card (Dynamo PR #5500: "internal component, should not register with
    # Frontend"); a card from it is a violation. Only with card=None.
    internal_endpoint: bool = False
    # For a worker that must not register: a log line (regex) that shows it took its path
    # that registers nothing. Readiness waits for it (or, without one, the card grace), so a
    # late wrong registration is not missed.
    stays_out_log: str | None = None
    # Its readiness contract (READY_AFTER_CARD, STAYS_NOT_READY); None: the default for its
    # kind (see `readiness`).
    health: str | None = None

    @property
    def registers(self) -> bool:
        return self.card is not None and self.registrants > 0

    @property
    def readiness(self) -> str | None:
        """What its /health must say: a registering worker becomes ready after its card; one
        that must not register stays not ready; an internal endpoint of an older era (it
        serves peers, no card) is not judged."""
        if self.health is not None:
            return self.health
        if self.registers:
            return READY_AFTER_CARD
        return None if self.internal_endpoint else STAYS_NOT_READY


@dataclass(frozen=True, kw_only=True)
class WorkerPlacement:
    """Where one worker runs in a GPU layout, and the caps that let it share its GPU."""

    role: str
    gpu: int  # logical GPU index within the deployment's share of the visible GPUs
    flags: tuple[str, ...] = ()  # memory / KV / batch caps for this layout
    vram_gib: float | None = None  # estimate; None: takes what sglang's static fraction gives
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
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
        """The role's placement; a process outside the topology (a stray an edge test starts)
        gets no caps, on the layout's first GPU."""
        return next((w for w in self.workers if w.role == role), WorkerPlacement(role=role, gpu=0))


@dataclass(frozen=True, kw_only=True)
class GpuProfile:
    """How the GPU tier runs a topology: its layouts, and whether it is nightly-only there."""

    placements: tuple[Placement, ...]
    nightly: bool = False  # too big or slow for every change on GPU runners
    # Why there is no single-GPU layout, where there is none (multi-node: a GPU per node).
    no_single_gpu: str | None = None

    @property
    def packed(self) -> Placement:
        """The layout on the fewest GPUs (1 wherever Dynamo has a single-GPU variant): the one
        the CPU tier runs."""
        return min(self.placements, key=lambda p: p.gpus)


@dataclass(frozen=True, kw_only=True)
class Era:
    """How a topology is deployed and what it must register in an older range of Dynamo
    releases (their flags, workers and cards differ), or why it has no such deployment."""

    releases: str  # a PEP 440 range of ai-dynamo versions, e.g. ">=0.7,<0.9"
    workers: tuple[WorkerSpec, ...] = ()  # (): the topology's own (the current design)
    # False: the era's cards carry no worker_type / needs yet (Dynamo <1.3), so the own
    # workers' contracts are held to everything else.
    topology_fields: bool = True
    # CPU tier: why the era's deployment cannot run there (a stand-in not written for that
    # release's sglang): GPU-only in this range, skipped with the reason on CPU.
    cpu_skip: str | None = None
    requests: tuple[str, ...] | None = None  # None: the topology's own
    unsupported: str | None = None  # the reason the topology is skipped in this range
    # Dynamo <0.9 takes the namespace from DYN_NAMESPACE only (no --namespace flag).
    namespace_flag: bool = True
    # The request plane the era's workers serve on ("tcp" or "nats": <0.9 knows NATS only).
    request_plane: str = "tcp"
    # A served model name the era's workers insist on (0.7/0.8's encode worker accepts only
    # the model names it knows); None: the harness's unique name per deployment.
    served_model_name: str | None = None
    # Whether its workers' /health and the frontend's /ready are judged: the readiness contract
    # was measured on 1.6.1 with the operator's endpoint-health setting; older releases are not
    # held to it (0.7.1's frontend has no /v1/models/{model}/ready at all).
    health_judged: bool = False
    # Whether the frontend's /ready and /health are judged against etcd (with health_judged):
    # the route exists from 1.3 on (404 "Model not found" on 1.1.1 and 1.2.1, measured).
    frontend_readiness_judged: bool = False
    # Whether a worker's self-description (its metrics' model label, its card's runtime_config,
    # its LoRA cards' runtime data) is judged: measured on 1.6.1; older releases are not held
    # to it.
    self_description_judged: bool = False

    def shape(self, worker: WorkerSpec) -> WorkerSpec:
        """One of the topology's own workers as this era declares it."""
        if self.topology_fields or worker.card is None:
            return worker
        card = dataclasses.replace(worker.card, worker_type="", needs=())
        return dataclasses.replace(worker, card=card)

    def covers(self, version: str) -> bool:
        from packaging.specifiers import SpecifierSet

        return SpecifierSet(self.releases).contains(version, prereleases=True)


class UnsupportedRelease(LookupError):
    """The topology has no deployment declared for this Dynamo release."""


@dataclass(frozen=True, kw_only=True)
class Topology:
    name: str
    workers: tuple[WorkerSpec, ...]
    requests: tuple[str, ...]  # request kinds, see discovery_harness.serving.requests
    gpu: GpuProfile
    shapes: str = CHEAP_SHAPES  # of each kind in requests: CHEAP_SHAPES or EVERY_SHAPE
    marks: tuple[str, ...] = ()  # pytest markers beyond the common ones
    timeout_s: int = 180  # CPU tier: ~3x the measured duration, rounded up
    known_violations: tuple[KnownViolation, ...] = ()
    # CPU tier: why this topology cannot run faithfully there (then GPU-only, skipped with
    # this reason); None: it runs on both tiers.
    cpu_skip: str | None = None
    # CPU tier: seconds to serve and register when a worker starts fresh python processes
    # of its own (gateway children), which the template cannot fork; None: the default.
    cpu_register_deadline_s: float | None = None
    # CPU tier: run with -m nightly only (too slow there for every run; the GPU tier's
    # schedule is GpuProfile.nightly).
    cpu_nightly: bool = False
    # The ai-dynamo releases `workers` describe; older ranges are declared in `eras`.
    releases: str = ">=1.6"
    eras: tuple[Era, ...] = ()
    # Set on a topology made for an era by `for_release` (how the harness launches it).
    era: Era | None = None
    # Asset keys the scenario uses besides its workers' models (a LoRA adapter it loads at
    # runtime): fetched and required like the models on the GPU tier.
    assets: tuple[str, ...] = ()
    # Older releases whose readiness contract (workers' /health with the operator's settings,
    # the canary, the frontend's /ready) was measured: their workers run with those settings
    # and are judged by it, what they get wrong declared as known violations (a PEP 440
    # range; "": none). Releases outside it run as their history was measured.
    readiness_releases: str = ""
    # Of those, the releases whose frontend has the readiness route (`/v1/models/{model}/ready`)
    # judged against etcd too ("": all of readiness_releases).
    frontend_readiness_releases: str = ""

    @property
    def asset_keys(self) -> tuple[str, ...]:
        """Every asset key the GPU tier must have in its cache for this topology."""
        return tuple(dict.fromkeys((*(w.model for w in self.workers), *self.assets)))

    def for_release(self, version: str) -> Topology:
        """This topology as the given Dynamo release deploys it; UnsupportedRelease (with the
        reason) where the catalogue declares none."""
        from packaging.specifiers import SpecifierSet

        if version == "unknown" or SpecifierSet(self.releases).contains(version, True):
            return self
        era = next((e for e in self.eras if e.covers(version)), None)
        if era is None:
            raise UnsupportedRelease(
                f"{self.name}: no contract declared for ai-dynamo {version} (the catalogue "
                f"describes {self.releases}"
                + "".join(f", {e.releases}" for e in self.eras if not e.unsupported)
                + ")"
            )
        if era.unsupported:
            raise UnsupportedRelease(f"{self.name} on ai-dynamo {version}: {era.unsupported}")
        if self.readiness_releases and SpecifierSet(self.readiness_releases).contains(
            version, True
        ):
            frontend = SpecifierSet(self.frontend_readiness_releases or self.readiness_releases)
            era = dataclasses.replace(
                era, health_judged=True, frontend_readiness_judged=frontend.contains(version, True)
            )
        return dataclasses.replace(
            self,
            workers=era.workers or tuple(map(era.shape, self.workers)),
            requests=self.requests if era.requests is None else era.requests,
            # Each declaration names its releases: keep those of this one (e.g. a frontend's
            # listing before 1.1), drop the rest.
            known_violations=tuple(k for k in self.known_violations if k.applies_to(version)),
            eras=(),
            era=era,
            cpu_skip=era.cpu_skip or self.cpu_skip,
        )

    @property
    def health_judged(self) -> bool:
        """Whether its workers' /health and the frontend's /ready are held to their contracts."""
        return self.era is None or self.era.health_judged

    @property
    def frontend_readiness_judged(self) -> bool:
        """Whether the frontend's /ready and /health are held to agree with etcd."""
        return self.era is None or (self.era.health_judged and self.era.frontend_readiness_judged)

    @property
    def self_description_judged(self) -> bool:
        """Whether its workers' metrics labels and runtime config are judged."""
        return self.era is None or self.era.self_description_judged

    @property
    def public_workers(self) -> tuple[WorkerSpec, ...]:
        return tuple(w for w in self.workers if w.card is not None and w.card.public)

    @property
    def registering_workers(self) -> tuple[WorkerSpec, ...]:
        """The workers that must publish a card (an audit matches what it finds to these)."""
        return tuple(w for w in self.workers if w.registers)

    def worker(self, role: str) -> WorkerSpec:
        return next(w for w in self.workers if w.role == role)


@dataclass(frozen=True)
class Scenario:
    """A topology in one GPU layout: what one test item deploys."""

    topology: Topology
    placement: Placement

    def __repr__(self) -> str:
        """Its test id (a failure's traceback shows the argument, not the whole catalogue)."""
        return f"<scenario {self.topology.name}-{self.placement.name}>"

    @classmethod
    def packed(cls, topology: Topology) -> Scenario:
        return cls(topology, topology.gpu.packed)
