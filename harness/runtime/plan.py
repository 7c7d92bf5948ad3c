"""`python -m harness plan`: every worker's exact command, env delta, GPUs, VRAM and timeout,
built by the same `worker_command` a deployment uses, without starting anything."""

from __future__ import annotations

import argparse
import json
import shlex
import tempfile
from pathlib import Path

from harness import ports
from harness.catalogue import Catalogue
from harness.deployment import Settings
from harness.deployment.options import describe_default_deadlines
from harness.loopback import ProcessPorts
from harness.model_source import ModelSource, TinyModels, gpu_models
from harness.runtime import gpus
from harness.runtime.launch import (
    TIER_DIFFERENCES,
    TierDifference,
    WorkerCommand,
    WorkerSite,
    placeholders,
    worker_command,
)
from harness.runtime.tier import CPU, GPU
from harness.topology import Scenario, Topology

PLACEHOLDER_ETCD = "http://127.0.0.1:<etcd-port>"
PLACEHOLDER_NATS = "nats://127.0.0.1:<nats-port>"


def scenarios_for(tier: str, topology: Topology, gpu_count: int) -> list[Scenario]:
    """What a run would deploy: the packed layout on the CPU tier, else every layout that
    fits the GPUs."""
    if tier == CPU:
        return [Scenario.packed(topology)]
    return [Scenario(topology, p) for p in topology.gpu.placements if p.gpus <= gpu_count]


def launch_order(scenario: Scenario, tier: str) -> list[str]:
    order = scenario.placement.start_order if tier == GPU else ()
    return [w.role for w in scenario.topology.workers if w.role not in order] + list(order)


def build_plan(
    catalogue: Catalogue,
    tier: str,
    *,
    gpu_count: int = 1,
    topologies: list[str] | None = None,
    overrides: list[str] | None = None,
    workdir: Path,
    models: ModelSource | None = None,
) -> list[WorkerCommand]:
    if models is None:
        models = (
            TinyModels(workdir / "models")
            if tier == CPU
            else gpu_models(overrides or [], require_cached=False)
        )
    visible = tuple(str(i) for i in range(gpu_count))
    settings = Settings(tier=tier)
    commands = []
    for topology in catalogue.select(topologies):
        for scenario in scenarios_for(tier, topology, gpu_count):
            assigned = gpus.assign(scenario.placement, visible) if tier == GPU else {}
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


def render_text(commands: list[WorkerCommand], tier: str, gpu_count: int) -> str:
    lines = [f"# plan: tier {tier}" + (f", {gpu_count} GPU(s)" if tier == GPU else "")]
    lines.append("# what differs between the tiers (everything else is the same command):")
    deadlines = TierDifference(
        "deadlines", describe_default_deadlines(CPU), describe_default_deadlines(GPU)
    )
    for diff in (*TIER_DIFFERENCES, deadlines):
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
                + (f", ~{vram:.1f} GiB VRAM estimated" if tier == GPU and vram else "")
                + ") =="
            )
        lines.append(f"-- {command.role}: {_resources(command, tier)}")
        lines.append("   " + shlex.join(command.argv))
        lines.append(
            "   env: " + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(command.env.items()))
        )
    return "\n".join(lines)


def _resources(command: WorkerCommand, tier: str) -> str:
    parts = []
    if tier == GPU:
        parts.append(f"GPU {','.join(command.gpus)}")
        parts.append(
            f"~{command.vram_gib:.1f} GiB" if command.vram_gib else "VRAM: sglang's static share"
        )
    parts.append(f"timeout {command.timeout_s:.0f} s")
    if command.start_after:
        parts.append("starts after " + ", ".join(command.start_after) + " serve")
    return ", ".join(parts)


def render_json(commands: list[WorkerCommand]) -> str:
    return json.dumps([c.as_dict() for c in commands], indent=2)


def plan_command(catalogue: Catalogue, args: argparse.Namespace) -> str:
    """The CLI's `plan` (args from its argparse sub-parser). Scratch dirs and CPU-tier model
    dirs live in a temporary folder removed afterwards: a run makes its own."""
    with tempfile.TemporaryDirectory(prefix="harness-plan-") as workdir:
        commands = build_plan(
            catalogue,
            args.tier,
            gpu_count=args.gpus,
            topologies=args.topology or None,
            overrides=args.model,
            workdir=Path(workdir),
        )
    if args.json:
        return render_json(commands)
    return render_text(commands, args.tier, args.gpus)
