"""A deployment's plan: every value it is started with, computed before anything starts.

`plan()` turns a topology (or scenario), the test's options and the session's facts into a
frozen `DeploymentPlan`: its namespace and model name, which frontend it talks to (a plane
other than the session's gets a frontend of its own), which observer reads its records (Dynamo's
file store gets one of its own), the start order, the GPUs per role, the ports its workers
share and its registration deadline. Bad options fail here, with one message, before a process
exists. Ports come from the allocator it is given, so a unit test plans without touching the
port registry.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from discovery_harness.deployment.options import FILE, FRONTEND_MODES, OWN, SHARED, Planes, Settings
from discovery_harness.model.topology import Scenario, Topology
from discovery_harness.runtime import gpus
from discovery_harness.runtime.launch import placeholders
from discovery_harness.runtime.spawn import FRESH


@dataclass(frozen=True, kw_only=True)
class DeployOptions:
    """What a test may ask of one deployment (the `deploy` fixture's keyword arguments)."""

    faults: Mapping[str, str] = field(default_factory=dict)  # role -> fault (CPU tier)
    fault_delay_s: float = 0.0
    strict: bool = False  # self-tests see known violations too
    sequential: bool | None = None  # the layout's start order (None: the tier's default)
    spawn: str | None = None  # "fresh": fresh processes whatever the session's mode
    order: tuple[str, ...] | None = None  # every role, one at a time, in this order
    frontend: str = SHARED  # the session's, or one of its own ("own", "late")
    env: Mapping[str, str] = field(default_factory=dict)  # for every worker (and frontend)
    planes: Planes = field(default_factory=Planes)


@dataclass(frozen=True, kw_only=True)
class SessionFacts:
    """What a plan needs to know of the session (values only: no process, no client)."""

    settings: Settings
    workdir: Path
    shared_frontend_port: int
    gpu_share: tuple[str, ...] = ()
    template: bool = False  # a worker template exists to fork from


@dataclass(frozen=True, kw_only=True)
class DeploymentPlan:
    scenario: Scenario
    namespace: str
    model_name: str
    workdir: Path
    planes: Planes
    env: Mapping[str, str]  # on top of every worker's own (and its own frontend's)
    frontend_mode: str  # SHARED, OWN or LATE
    frontend_port: int  # fixed now, so a restarted frontend keeps its address
    # Dynamo's file store to watch with an observer of its own; None: the session's observer.
    file_store: Path | None
    start_order: tuple[str, ...]  # roles started one at a time, in this order
    explicit_order: bool  # the test's order (each registered before the next), not the layout's
    faults: Mapping[str, str]
    fault_delay_s: float
    strict: bool
    forked: bool  # workers forked from the session's template (else fresh processes)
    register_deadline_s: float
    gpus: Mapping[str, tuple[str, ...]]  # physical GPU ids per role (GPU tier)
    shared_ports: Mapping[str, int]  # {port:NAME} placeholders in the workers' flags

    @property
    def topology(self) -> Topology:
        return self.scenario.topology

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.frontend_port}"

    @property
    def request_plane(self) -> str:
        """What the workers serve requests on: the era's (an older release), else the planes'."""
        era = self.topology.era
        return era.request_plane if era else self.planes.request

    @property
    def first_started(self) -> tuple[str, ...]:
        """The roles started at once, before the ordered ones."""
        return tuple(w.role for w in self.topology.workers if w.role not in self.start_order)

    @property
    def launch_order(self) -> tuple[str, ...]:
        """Every role in the order the deployment starts it: the first ones at once, then the
        ordered ones one at a time (what `plan` prints)."""
        return (*self.first_started, *self.start_order)

    def held_ports(self) -> list[int]:
        """The ports the plan allocated (released when the deployment stops)."""
        own = [self.frontend_port] if self.frontend_mode != SHARED else []
        return [*self.shared_ports.values(), *own]


def plan(
    what: Topology | Scenario,
    options: DeployOptions,
    facts: SessionFacts,
    allocate: Callable[[int], list[int]],
    suffix: str | None = None,
) -> DeploymentPlan:
    """The deployment's plan; ValueError names the first option that cannot be planned."""
    scenario = what if isinstance(what, Scenario) else Scenario.packed(what)
    topology = scenario.topology
    roles = [w.role for w in topology.workers]
    if options.order is not None and sorted(options.order) != sorted(roles):
        raise ValueError(f"order {options.order} must name every role of {topology.name} once")
    unknown = set(options.faults) - set(roles)
    if unknown:
        raise ValueError(f"faults for roles not in {topology.name}: {sorted(unknown)}")
    if options.frontend not in FRONTEND_MODES:
        raise ValueError(f"frontend must be one of {FRONTEND_MODES}, not {options.frontend!r}")
    suffix = suffix or uuid.uuid4().hex[:6]
    namespace = f"h-{topology.name}-{suffix}"
    era_name = topology.era.served_model_name if topology.era else None
    workdir = facts.workdir / "deployments" / namespace
    file_store = workdir / "discovery"
    plane_env = options.planes.env(file_store)
    # Discovery or planes other than the session's: a frontend of its own.
    frontend = OWN if plane_env and options.frontend == SHARED else options.frontend
    settings = facts.settings
    sequential = settings.tier.start_order if options.sequential is None else options.sequential
    if options.order is not None:
        order = tuple(options.order)
    else:
        order = scenario.placement.start_order if sequential else ()
    forked = facts.template and options.spawn != FRESH
    names = sorted({n for w in topology.workers for n in placeholders(w.flags)})
    wanted = len(names) + (0 if frontend == SHARED else 1)
    allocated = allocate(wanted) if wanted else []
    frontend_port = facts.shared_frontend_port if frontend == SHARED else allocated.pop()
    return DeploymentPlan(
        scenario=scenario,
        namespace=namespace,
        model_name=era_name or f"{topology.name}-{suffix}",
        workdir=workdir,
        planes=options.planes,
        env={**plane_env, **options.env},
        frontend_mode=frontend,
        frontend_port=frontend_port,
        file_store=file_store if options.planes.discovery == FILE else None,
        start_order=order,
        explicit_order=options.order is not None,
        faults=dict(options.faults),
        fault_delay_s=options.fault_delay_s,
        strict=options.strict,
        forked=forked,
        register_deadline_s=settings.register_deadline(scenario, forked=forked),
        gpus=gpus.assign(scenario.placement, facts.gpu_share) if settings.tier.gpus else {},
        shared_ports=dict(zip(names, allocated, strict=True)),
    )
