"""One command for a worker, both tiers: the only place a worker's command and env are built.

Deployments, the benchmark and `python -m discovery_harness plan` all call `worker_command`, and get
a
`WorkerCommand`: the module, the harness's own options, the Dynamo argv and the environment
(planes and ports included), as named fields. A fresh process runs `command.argv()`, the
worker template is handed the command whole, and the plan prints it whole; nothing reads an
argv back by position. The tier's policy (discovery_harness.runtime.tier) decides the engine,
device,
models, GPUs and Hugging Face settings; the CPU tier runs each topology's packed 1-GPU layout,
so the flags GPU runners use are exercised on every commit.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from discovery_harness.common import locations
from discovery_harness.model.topology import Scenario, WorkerSpec
from discovery_harness.processes.loopback import (
    LOOPBACK,
    ProcessPorts,
    inherited_env,
    loopback_env,
    offline_hf_env,
    run_env,
)
from discovery_harness.runtime import dynamo_env, dynamo_src
from discovery_harness.runtime.tier import CPU, STAND_INS_ENV, TierPolicy
from discovery_harness_workers.faults import FAULT_DELAY_ENV, FAULT_ENV


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
    # The deployment's own environment, set last: another discovery backend or request /
    # event plane (discovery_harness.deployment.options.Planes), a test's variables.
    deployment_env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HarnessOptions:
    """What the CPU launcher does besides running dynamo.sglang: a fault (self-tests). It
    travels in the worker's environment, where the launcher and the start-up hook of the
    worker's own python children read it by name (workers/faults.py)."""

    fault: str | None = None
    fault_delay_s: float = 0.0

    def env(self) -> dict[str, str]:
        if not self.fault:
            return {}
        return {FAULT_ENV: self.fault, FAULT_DELAY_ENV: str(self.fault_delay_s)}

    def as_dict(self) -> dict[str, Any]:
        return {"fault": self.fault, "fault_delay_s": self.fault_delay_s}


@dataclass(frozen=True)
class WorkerCommand:
    topology: str
    layout: str
    role: str
    python: str
    module: str  # python -m MODULE
    harness: HarnessOptions
    dynamo_argv: tuple[str, ...]  # what dynamo.sglang's own parser gets
    env: dict[str, str]  # set by the harness on top of the caller's environment
    gpus: tuple[str, ...]
    vram_gib: float | None
    timeout_s: float  # to serve and register, from the deployment's start
    start_after: tuple[str, ...] = ()  # roles the plan starts before this one, one at a time

    def argv(self) -> list[str]:
        """The fresh process's command line."""
        return [self.python, "-m", self.module, *self.dynamo_argv]

    def harness_env(self) -> dict[str, str]:
        """Everything the harness sets: the command's env and its harness options."""
        return {**self.env, **self.harness.env()}

    def environment(self) -> dict[str, str]:
        """The process's whole environment."""
        return {**inherited_env(), **self.harness_env()}

    def as_dict(self) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "layout": self.layout,
            "role": self.role,
            "argv": self.argv(),
            "python": self.python,
            "module": self.module,
            "harness": self.harness.as_dict(),
            "dynamo_argv": list(self.dynamo_argv),
            "env": dict(sorted(self.env.items())),
            "gpus": list(self.gpus),
            "vram_gib": self.vram_gib,
            "timeout_s": self.timeout_s,
            "start_after": list(self.start_after),
        }


def worker_command(
    tier: TierPolicy,
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
    start_after: tuple[str, ...] = (),
) -> WorkerCommand:
    placement = scenario.placement.of(spec.role)
    era = scenario.topology.era
    namespace_flag = era is None or era.namespace_flag
    if fault and not tier.fault_injection:
        raise ValueError(f"fault injection does not exist on the {tier.name} tier")
    argv = [
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
    argv += tier.device_argv
    env = loopback_env(
        site.etcd, site.nats, site.ports, site.tmpdir, dynamo_env.response_stream_host(LOOPBACK)
    )
    if not spec.pin_request_plane:  # its own python children inherit this environment
        for name in REQUEST_PLANE_PORTS:
            env.pop(name)
    if not namespace_flag:  # Dynamo <0.9: the namespace comes from the environment only
        env["DYN_NAMESPACE"] = site.namespace
    if scenario.topology.health_judged:  # older releases run as they did before readiness
        env.update(worker_health_env())
    env.update(dict(spec.env))
    env.update(dict(placement.env))
    env.update(hugging_face_env(tier, site.hf_home, hf_offline))
    env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus) if tier.gpus else ""
    if tier.stand_ins:
        env.update(stand_in_env())
        env[STAND_INS_ENV] = "1"  # for the worker's own python children (gateway)
    env.update(site.deployment_env)
    env = dynamo_src.with_checkout(env)  # --dynamo-src: the checkout's Python first
    return WorkerCommand(
        topology=scenario.topology.name,
        layout=scenario.placement.name,
        role=spec.role,
        python=dynamo_env.active().python,
        module=tier.engine_module,
        harness=HarnessOptions(fault, fault_delay_s if fault else 0.0),
        dynamo_argv=tuple(argv),
        env=env,
        gpus=gpus if tier.gpus else (),
        vram_gib=placement.vram_gib if tier.gpus else None,
        timeout_s=timeout_s,
        start_after=start_after,  # the deployment plan's order (shown by `plan`)
    )


REQUEST_PLANE_PORTS = ("DYN_TCP_RPC_PORT", "DYN_TCP_RESPONSE_STREAM_PORT")
# The canary's idle wait: short enough that each worker's own health-check payload reaches its
# handler during a scenario (Dynamo's default is 10 s).
CANARY_WAIT_S = 1


def worker_health_env() -> dict[str, str]:
    """What Dynamo's operator gives a worker pod, so the worker's /health is the one
    Kubernetes' readiness probe reads: the system server on, ready only when its generate
    endpoint is (component_worker.go); and the health canary on, as the engines of a
    failover deployment run it (failover.go), with a short idle wait."""
    return {
        "DYN_SYSTEM_ENABLED": "true",
        "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS": '["generate"]',
        "DYN_HEALTH_CHECK_ENABLED": "true",
        "DYN_CANARY_WAIT_TIME": str(CANARY_WAIT_S),
    }


_PLACEHOLDER = re.compile(r"\{port:([a-z_]+)\}")


def placeholders(flags: tuple[str, ...]) -> set[str]:
    """Names of the shared ports a worker's flags refer to ({port:NAME})."""
    return {name for flag in flags for name in _PLACEHOLDER.findall(flag)}


def resolve_placeholders(flag: str, shared_ports: dict[str, int]) -> str:
    return _PLACEHOLDER.sub(lambda m: str(shared_ports[m.group(1)]), flag)


def hugging_face_env(tier: TierPolicy, hf_home: Path, offline: bool = True) -> dict[str, str]:
    """CPU tier: no hub at all (local dirs). GPU tier: the caller's HF_HOME and HF_TOKEN stay;
    offline once the models are in that cache, so a run never downloads."""
    if tier.private_hf_home:
        return offline_hf_env(hf_home)
    return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"} if offline else {}


def stand_in_env() -> dict[str, str]:
    """PYTHONPATH of CPU-tier processes: the start-up hook's folder (it gives the python
    processes a worker spawns itself, the gateway's `python -m dynamo.sglang` children, the same
    stand-ins) and a folder holding only the workers package (a release environment's python
    imports it from there, and nothing else of the harness's environment)."""
    inherited = os.environ.get("PYTHONPATH", "")
    own = (str(locations.startup_hook_dir()), str(locations.worker_import_root()))
    return {"PYTHONPATH": os.pathsep.join(p for p in (*own, inherited) if p)}


def template_env(hf_home: Path, tmpdir: Path) -> dict[str, str]:
    """The CPU-tier worker template's whole environment: what every worker of the run shares,
    no session's etcd or NATS (each forked worker gets its own environment whole; tests hold
    the template to reading nothing at import that differs per worker), so one template can
    serve every session of a run (the xdist workers')."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    return dynamo_src.with_checkout({
        **inherited_env(),
        **run_env(dynamo_env.response_stream_host(LOOPBACK)),
        **hugging_face_env(CPU, hf_home),
        **stand_in_env(),
        "CUDA_VISIBLE_DEVICES": "",
        "TMPDIR": str(tmpdir),
    })
