"""One command line for a worker, both tiers: the only place a worker's argv and env are built.

Deployments, the benchmark and `python -m harness plan` all call `worker_command`. The tier
decides only the engine (CPU stand-ins or real sglang) and where models come from; every
other difference is a row of `TIER_DIFFERENCES`, which the plan prints. The CPU tier runs each
topology's packed 1-GPU layout, so the flags GPU runners use are exercised on every commit.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.loopback import (
    ProcessPorts,
    inherited_env,
    loopback_env,
    offline_hf_env,
    session_env,
)
from harness.runtime import dynamo_env
from harness.runtime.tier import CPU, GPU
from harness.topology import Scenario, WorkerSpec

CPU_ENGINE_MODULE = "workers.cpu_sglang"  # real dynamo.sglang with sglang's GPU classes swapped
ROOT = Path(__file__).resolve().parents[2]
# On a CPU-tier worker's PYTHONPATH: its start-up hook gives the python processes a worker
# spawns itself (the gateway's `python -m dynamo.sglang` children) the same stand-ins.
STARTUP_HOOK_DIR = ROOT / "workers" / "startup"
GPU_ENGINE_MODULE = "dynamo.sglang"


@dataclass(frozen=True)
class TierDifference:
    aspect: str
    cpu: str
    gpu: str


TIER_DIFFERENCES: tuple[TierDifference, ...] = (
    TierDifference(
        "engine",
        f"python -m {CPU_ENGINE_MODULE} (dynamo.sglang's own main.worker; sglang's Engine, "
        "MMEncoder and DiffGenerator replaced by CPU stand-ins)",
        f"python -m {GPU_ENGINE_MODULE}",
    ),
    TierDifference("device", "--device cpu appended", "sglang picks CUDA"),
    TierDifference(
        "models",
        "tiny local dirs of the real models' architectures, generated per session",
        "Hugging Face names or local paths (catalogue GPU_MODELS, --model KEY=REF)",
    ),
    TierDifference(
        "Hugging Face env",
        "HF_HUB_OFFLINE=1, TRANSFORMERS_OFFLINE=1, a private empty HF_HOME per session",
        "HF_HOME / HF_TOKEN passed through; HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1 once "
        "every model is in the cache (`python -m harness models fetch`)",
    ),
    TierDifference(
        "GPUs",
        "CUDA_VISIBLE_DEVICES empty",
        "CUDA_VISIBLE_DEVICES = the layout's GPUs within this run's share",
    ),
    TierDifference(
        "layout", "the packed 1-GPU layout's flags", "each layout that fits the visible GPUs"
    ),
    TierDifference(
        "start order", "all workers at once", "the layout's start order, each serving first"
    ),
    # "deadlines": harness.deployment.options holds them; `plan` prints its row from there.
    TierDifference("fault injection", "--harness-fault (self-tests)", "none"),
    TierDifference(
        "child processes",
        "PYTHONPATH has workers/startup, whose sitecustomize installs the stand-ins in "
        "python processes the worker spawns (HARNESS_STAND_INS=1)",
        "unchanged",
    ),
    TierDifference(
        "process",
        "forked from a pre-imported template (--spawn zygote, the default) or fresh",
        "always a fresh process",
    ),
)


@dataclass(frozen=True)
class WorkerSite:
    """Where one worker process lives: its deployment, ports, discovery and scratch dirs."""

    namespace: str
    model_name: str
    ports: ProcessPorts
    etcd: str
    nats: str
    tmpdir: Path
    media_dir: Path
    hf_home: Path  # CPU tier: the session's private, empty Hugging Face home
    # Ports the deployment's workers share, named in flags as {port:NAME} (a multi-node
    # group's --dist-init-addr): allocated once per deployment.
    shared_ports: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkerCommand:
    topology: str
    layout: str
    role: str
    argv: tuple[str, ...]
    env: dict[str, str]  # set by the harness on top of the caller's environment
    gpus: tuple[str, ...]
    vram_gib: float | None
    timeout_s: float  # to serve and register, from the deployment's start
    start_after: tuple[str, ...] = ()  # roles that must be serving before this one starts
    notes: tuple[str, ...] = field(default=())

    def environment(self) -> dict[str, str]:
        """The process's whole environment."""
        return {**inherited_env(), **self.env}

    def dynamo_argv(self) -> list[str]:
        """The argv dynamo.sglang's own parser gets (after the module and harness flags)."""
        argv = list(self.argv[3:])
        while argv and argv[0].startswith("--harness-"):
            argv = argv[2:]
        return argv

    def as_dict(self) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "layout": self.layout,
            "role": self.role,
            "argv": list(self.argv),
            "env": dict(sorted(self.env.items())),
            "gpus": list(self.gpus),
            "vram_gib": self.vram_gib,
            "timeout_s": self.timeout_s,
            "start_after": list(self.start_after),
        }


def worker_command(
    tier: str,
    scenario: Scenario,
    spec: WorkerSpec,
    *,
    model_path: str,
    site: WorkerSite,
    timeout_s: float,
    gpus: tuple[str, ...] = (),
    hf_offline: bool = True,
    fault: str | None = None,
    fault_delay_s: float = 0.0,
) -> WorkerCommand:
    placement = scenario.placement.of(spec.role)
    era = scenario.topology.era
    namespace_flag = era is None or era.namespace_flag
    argv = [dynamo_env.active().python, "-m", _engine_module(tier)]
    if fault:
        if tier != CPU:
            raise ValueError("fault injection exists on the CPU tier only")
        argv += ["--harness-fault", fault, "--harness-fault-delay", str(fault_delay_s)]
    argv += [
        "--model-path",
        model_path,
        "--served-model-name",
        site.model_name,
        *(["--namespace", site.namespace] if namespace_flag else []),
        "--disaggregation-bootstrap-port",
        str(site.ports.bootstrap),
        *(resolve_placeholders(flag, site.shared_ports) for flag in spec.flags),
        *placement.flags,
    ]
    if "--video-generation-worker" in spec.flags:
        argv += ["--media-output-fs-url", site.media_dir.as_uri()]
    env = loopback_env(site.etcd, site.nats, site.ports, site.tmpdir)
    if not spec.pin_request_plane:  # its own python children inherit this environment
        for name in REQUEST_PLANE_PORTS:
            env.pop(name)
    if not namespace_flag:  # Dynamo <0.9: the namespace comes from the environment only
        env["DYN_NAMESPACE"] = site.namespace
    env.update(dict(spec.env))
    env.update(dict(placement.env))
    env.update(hugging_face_env(tier, site.hf_home, hf_offline))
    if tier == CPU:
        argv += ["--device", "cpu"]
        env["CUDA_VISIBLE_DEVICES"] = ""
        env.update(stand_in_env())
        env["HARNESS_STAND_INS"] = "1"  # for the worker's own python children (gateway)
        start_after: tuple[str, ...] = ()
    else:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        order = scenario.placement.start_order
        start_after = order[: order.index(spec.role)] if spec.role in order else ()
    return WorkerCommand(
        topology=scenario.topology.name,
        layout=scenario.placement.name,
        role=spec.role,
        argv=tuple(argv),
        env=env,
        gpus=gpus if tier == GPU else (),
        vram_gib=placement.vram_gib if tier == GPU else None,
        timeout_s=timeout_s,
        start_after=start_after,
    )


REQUEST_PLANE_PORTS = ("DYN_TCP_RPC_PORT", "DYN_TCP_RESPONSE_STREAM_PORT")
_PLACEHOLDER = re.compile(r"\{port:([a-z_]+)\}")


def placeholders(flags: tuple[str, ...]) -> set[str]:
    """Names of the shared ports a worker's flags refer to ({port:NAME})."""
    return {name for flag in flags for name in _PLACEHOLDER.findall(flag)}


def resolve_placeholders(flag: str, shared_ports: dict[str, int]) -> str:
    return _PLACEHOLDER.sub(lambda m: str(shared_ports[m.group(1)]), flag)


def hugging_face_env(tier: str, hf_home: Path, offline: bool = True) -> dict[str, str]:
    """CPU tier: no hub at all (local dirs). GPU tier: the caller's HF_HOME and HF_TOKEN stay;
    offline once the models are in that cache, so a run never downloads."""
    if tier == CPU:
        return offline_hf_env(hf_home)
    return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"} if offline else {}


def _engine_module(tier: str) -> str:
    if tier == CPU:
        return CPU_ENGINE_MODULE
    if tier == GPU:
        return GPU_ENGINE_MODULE
    raise ValueError(f"unknown tier {tier!r}")


def stand_in_env() -> dict[str, str]:
    """PYTHONPATH of CPU-tier processes: the start-up hook's folder and the project."""
    inherited = os.environ.get("PYTHONPATH", "")
    return {
        "PYTHONPATH": os.pathsep.join(p for p in (str(STARTUP_HOOK_DIR), str(ROOT), inherited) if p)
    }


def template_env(etcd: str, nats: str, hf_home: Path, tmpdir: Path) -> dict[str, str]:
    """The CPU-tier worker template's whole environment: what every worker of the session
    shares (each forked worker then gets its own on top; tests hold the template to reading
    nothing at import that differs per worker)."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    return {
        **inherited_env(),
        **session_env(etcd, nats),
        **hugging_face_env(CPU, hf_home),
        **stand_in_env(),
        "CUDA_VISIBLE_DEVICES": "",
        "TMPDIR": str(tmpdir),
    }
