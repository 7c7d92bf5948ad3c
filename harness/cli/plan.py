"""`python -m discovery_harness plan`: every worker's exact command, env delta, GPUs, VRAM,
timeout and start order, from the same `plan()` and `worker_command` a deployment uses,
without starting anything; and the tier table, generated from the tiers' policies."""

from __future__ import annotations

import argparse
import json
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from discovery_harness.deployment import Settings
from discovery_harness.deployment.plan import DeploymentPlan, DeployOptions, SessionFacts, plan
from discovery_harness.model.catalogue import Catalogue
from discovery_harness.model.topology import Placement, Scenario, Topology
from discovery_harness.processes import ports
from discovery_harness.processes.loopback import ProcessPorts
from discovery_harness.runtime import gpus
from discovery_harness.runtime.launch import WorkerCommand, WorkerSite, worker_command
from discovery_harness.runtime.model_source import ModelSource, TinyModels, gpu_models
from discovery_harness.runtime.tier import TIERS, TierPolicy, tier_differences

PLACEHOLDER_ETCD = "http://127.0.0.1:<etcd-port>"
PLACEHOLDER_NATS = "nats://127.0.0.1:<nats-port>"


@dataclass(frozen=True)
class NotPlanned:
    """A GPU layout the run would skip, and why (too few GPUs, too little memory)."""

    topology: str
    layout: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"topology": self.topology, "layout": self.layout, "reason": self.reason}


def why_not(placement: Placement, gpu_count: int, gpu_memory_gib: float | None) -> str | None:
    """Why a run with these GPUs skips the layout, or None when it runs it."""
    if placement.gpus > gpu_count:
        return f"needs {placement.gpus} GPU(s); the plan has {gpu_count}"
    return gpus.does_not_fit(placement, (gpu_memory_gib,) * placement.gpus)


def scenarios_for(
    tier: TierPolicy,
    topology: Topology,
    gpu_count: int,
    gpu_memory_gib: float | None = None,
    skipped: list[NotPlanned] | None = None,
) -> list[Scenario]:
    """What a run would deploy: the packed layout on the CPU tier, else every layout that
    fits the GPUs (count and memory); the others go to `skipped` with the reason."""
    if not tier.gpus:
        return [Scenario.packed(topology)]
    planned = []
    for placement in topology.gpu.placements:
        reason = why_not(placement, gpu_count, gpu_memory_gib)
        if reason is None:
            planned.append(Scenario(topology, placement))
        elif skipped is not None:
            skipped.append(NotPlanned(topology.name, placement.name, reason))
    return planned


def _shown_ports(count: int) -> list[int]:
    """Free ports to show in the commands, released at once: a plan holds none."""
    allocated = ports.allocate(count)
    ports.release(allocated)
    return allocated


def build_plan(
    catalogue: Catalogue,
    tier: TierPolicy,
    *,
    gpu_count: int = 1,
    topologies: list[str] | None = None,
    overrides: list[str] | None = None,
    workdir: Path,
    models: ModelSource | None = None,
    gpu_memory_gib: float | None = None,
    skipped: list[NotPlanned] | None = None,
    order: tuple[str, ...] | None = None,
) -> list[WorkerCommand]:
    """Every worker's command, in the order a deployment starts them: each layout goes through
    the deployment's own `plan()` (namespace, ports, GPUs, start order; `order` as a test's
    `deploy(order=...)`)."""
    if models is None:
        models = (
            TinyModels(workdir / "models")
            if tier.tiny_models
            else gpu_models(overrides or [], require_cached=False)
        )
    facts = SessionFacts(
        settings=Settings(tier=tier),
        workdir=workdir,
        shared_frontend_port=0,  # the commands do not name the frontend
        gpu_share=tuple(str(i) for i in range(gpu_count)),
    )
    options = DeployOptions(order=order)
    commands = []
    for topology in catalogue.select(topologies):
        for scenario in scenarios_for(tier, topology, gpu_count, gpu_memory_gib, skipped):
            planned = plan(scenario, options, facts, _shown_ports, suffix="plan")
            for index, role in enumerate(planned.launch_order):
                process_ports = ProcessPorts.allocate()
                ports.release(process_ports.all())
                site = WorkerSite(
                    namespace=planned.namespace,
                    model_name=planned.model_name,
                    ports=process_ports,
                    etcd=PLACEHOLDER_ETCD,
                    nats=PLACEHOLDER_NATS,
                    tmpdir=workdir / "tmp" / f"{topology.name}-{scenario.placement.name}-{index}",
                    media_dir=workdir / "media",
                    hf_home=workdir / "hf",
                    shared_ports=dict(planned.shared_ports),
                )
                spec = topology.worker(role)
                commands.append(
                    worker_command(
                        tier,
                        scenario,
                        spec,
                        model_path=models.path_for(topology.name, spec.model),
                        site=site,
                        timeout_s=planned.register_deadline_s,
                        gpus=planned.gpus.get(role, ()),
                        start_after=_started_before(planned, role),
                    )
                )
    return commands


def _started_before(planned: DeploymentPlan, role: str) -> tuple[str, ...]:
    order = planned.start_order
    return order[: order.index(role)] if role in order else ()


def start_order_line(commands: list[WorkerCommand], explicit: bool = False) -> str:
    """How one layout's workers start, from its commands (in launch order): at once, or one
    at a time, each once the one before serves (the layout's order) or is registered (a
    test's `order=`)."""
    together = [c.role for c in commands if not c.start_after]
    ordered = [c.role for c in commands if c.start_after]
    if not ordered:
        return "start order: " + ", ".join(together) + (" at once" if len(together) > 1 else "")
    first, *rest = together
    chain = " → ".join([*([first] if not rest else []), *ordered])
    at_once = f"{', '.join(together)} at once, then " if rest else ""
    turn = "registered" if explicit else "serving"
    return f"start order: {at_once}{chain} (each {turn} before the next starts)"


def render_text(
    commands: list[WorkerCommand],
    tier: TierPolicy,
    gpu_count: int,
    skipped: list[NotPlanned] | None = None,
    gpu_memory_gib: float | None = None,
    explicit_order: bool = False,
) -> str:
    memory = f" of {gpu_memory_gib:g} GiB" if gpu_memory_gib else ""
    lines = [f"# plan: tier {tier.name}" + (f", {gpu_count} GPU(s){memory}" if tier.gpus else "")]
    for layout in skipped or ():
        lines.append(f"# not planned: {layout.topology} ({layout.layout}): {layout.reason}")
    lines.append("# what differs between the tiers (everything else is the same command):")
    for diff in tier_differences():
        lines.append(f"#   {diff.aspect:<17} cpu: {diff.cpu}")
        lines.append(f"#   {'':<17} gpu: {diff.gpu}")
    current = None
    for command in commands:
        heading = (command.topology, command.layout)
        if heading != current:
            current = heading
            same_layout = [c for c in commands if (c.topology, c.layout) == heading]
            vram = sum(c.vram_gib or 0 for c in same_layout)
            lines.append("")
            lines.append(
                f"== {command.topology} ({command.layout}"
                + (f", ~{vram:.1f} GiB VRAM estimated" if tier.gpus and vram else "")
                + ") =="
            )
            lines.append(start_order_line(same_layout, explicit_order))
        lines.append(f"-- {command.role}: {_resources(command, tier)}")
        lines.append("   " + shlex.join(command.argv()))
        lines.append(
            "   env: "
            + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(command.harness_env().items()))
        )
    return "\n".join(lines)


def _resources(command: WorkerCommand, tier: TierPolicy) -> str:
    parts = []
    if tier.gpus:
        parts.append(f"GPU {','.join(command.gpus)}")
        parts.append(
            f"~{command.vram_gib:.1f} GiB" if command.vram_gib else "VRAM: sglang's static share"
        )
    parts.append(f"timeout {command.timeout_s:.0f} s")
    return ", ".join(parts)


def render_json(
    commands: list[WorkerCommand],
    skipped: list[NotPlanned] | None = None,
    gpu_memory_gib: float | None = None,
) -> str:
    """The workers to start, and the layouts left out with the reason."""
    return json.dumps(
        {
            "gpu_memory_gib": gpu_memory_gib,
            "workers": [c.as_dict() for c in commands],
            "not_planned": [s.as_dict() for s in skipped or ()],
        },
        indent=2,
    )


def plan_command(catalogue: Catalogue, args: argparse.Namespace) -> str:
    """The CLI's `plan` (args from its argparse sub-parser). Scratch dirs and CPU-tier model
    dirs live in a temporary folder removed afterwards: a run makes its own."""
    memory = args.gpu_memory
    if memory is None and TIERS[args.tier].gpus:  # the GPUs this machine has, when it has some
        visible = gpus.visible_gpus()[: args.gpus]
        known = gpus.total_memory_gib(visible)
        memory = min(known.values()) if known else None
    skipped: list[NotPlanned] = []
    order = tuple(args.order.split(",")) if args.order else None
    with tempfile.TemporaryDirectory(prefix="harness-plan-") as workdir:
        commands = build_plan(
            catalogue,
            TIERS[args.tier],
            gpu_count=args.gpus,
            topologies=args.topology or None,
            overrides=args.model,
            workdir=Path(workdir),
            gpu_memory_gib=memory,
            skipped=skipped,
            order=order,
        )
    if args.json:
        return render_json(commands, skipped, memory)
    return render_text(commands, TIERS[args.tier], args.gpus, skipped, memory, order is not None)
