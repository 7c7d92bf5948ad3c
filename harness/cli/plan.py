"""`python -m discovery_harness plan`: every worker's exact command, env delta, GPUs, VRAM and
timeout,
built by the same `worker_command` a deployment uses, without starting anything; and the
tier table, generated from the tiers' policies."""

from __future__ import annotations

import argparse
import json
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from discovery_harness.deployment import Settings
from discovery_harness.model.catalogue import Catalogue
from discovery_harness.model.topology import Placement, Scenario, Topology
from discovery_harness.processes import ports
from discovery_harness.processes.loopback import ProcessPorts
from discovery_harness.runtime import gpus
from discovery_harness.runtime.launch import WorkerCommand, WorkerSite, placeholders, worker_command
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


def launch_order(scenario: Scenario, tier: TierPolicy) -> list[str]:
    order = scenario.placement.start_order if tier.start_order else ()
    return [w.role for w in scenario.topology.workers if w.role not in order] + list(order)


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
) -> list[WorkerCommand]:
    if models is None:
        models = (
            TinyModels(workdir / "models")
            if tier.tiny_models
            else gpu_models(overrides or [], require_cached=False)
        )
    visible = tuple(str(i) for i in range(gpu_count))
    settings = Settings(tier=tier)
    commands = []
    for topology in catalogue.select(topologies):
        for scenario in scenarios_for(tier, topology, gpu_count, gpu_memory_gib, skipped):
            assigned = gpus.assign(scenario.placement, visible) if tier.gpus else {}
            shared = sorted({n for w in topology.workers for n in placeholders(w.flags)})
            shared_ports = dict(zip(shared, ports.allocate(len(shared)), strict=True))
            ports.release(list(shared_ports.values()))  # shown, not held
            for index, role in enumerate(launch_order(scenario, tier)):
                spec = topology.worker(role)
                process_ports = ProcessPorts.allocate()
                ports.release(process_ports.all())
                site = WorkerSite(
                    namespace=f"h-{topology.name}-plan",
                    model_name=f"{topology.name}-plan",
                    ports=process_ports,
                    etcd=PLACEHOLDER_ETCD,
                    nats=PLACEHOLDER_NATS,
                    tmpdir=workdir / "tmp" / f"{topology.name}-{scenario.placement.name}-{index}",
                    media_dir=workdir / "media",
                    hf_home=workdir / "hf",
                    shared_ports=shared_ports,
                )
                commands.append(
                    worker_command(
                        tier,
                        scenario,
                        spec,
                        model_path=models.path_for(topology.name, spec.model),
                        site=site,
                        timeout_s=settings.register_deadline(scenario),
                        gpus=assigned.get(role, ()),
                    )
                )
    return commands


def render_text(
    commands: list[WorkerCommand],
    tier: TierPolicy,
    gpu_count: int,
    skipped: list[NotPlanned] | None = None,
    gpu_memory_gib: float | None = None,
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
    if command.start_after:
        parts.append("starts after " + ", ".join(command.start_after) + " serve")
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
        )
    if args.json:
        return render_json(commands, skipped, memory)
    return render_text(commands, TIERS[args.tier], args.gpus, skipped, memory)
