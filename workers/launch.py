"""The command line of one worker, per tier.

CPU tier: `python -m workers.cpu_sglang` (the real dynamo.sglang with CPU stand-ins, fault
injection available). GPU tier: plain `python -m dynamo.sglang`, untouched.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from harness.topology import WorkerSpec

CPU, GPU = "cpu", "gpu"


@dataclass(frozen=True)
class LaunchRequest:
    spec: WorkerSpec
    model_path: Path
    model_name: str
    namespace: str
    bootstrap_port: int
    media_dir: Path
    fault: str | None = None
    fault_delay_s: float = 0.0


def worker_argv(tier: str, request: LaunchRequest) -> list[str]:
    if tier == CPU:
        argv = [sys.executable, "-m", "workers.cpu_sglang"]
        if request.fault:
            argv += [
                "--harness-fault",
                request.fault,
                "--harness-fault-delay",
                str(request.fault_delay_s),
            ]
    elif tier == GPU:
        if request.fault:
            raise ValueError("fault injection exists on the CPU tier only")
        argv = [sys.executable, "-m", "dynamo.sglang"]
    else:
        raise ValueError(f"unknown tier {tier!r}")
    argv += [
        "--model-path",
        str(request.model_path),
        "--served-model-name",
        request.model_name,
        "--namespace",
        request.namespace,
        "--disaggregation-bootstrap-port",
        str(request.bootstrap_port),
        *request.spec.flags,
    ]
    if "--video-generation-worker" in request.spec.flags:
        argv += ["--media-output-fs-url", request.media_dir.as_uri()]
    return argv
