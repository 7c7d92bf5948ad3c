"""The real Dynamo frontend (`python -m dynamo.frontend`) on 127.0.0.1 and a free port."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import httpx

from discovery_harness.common.deadline import Deadline
from discovery_harness.common.tls import shared_context
from discovery_harness.processes import ports
from discovery_harness.processes.infra import Endpoints
from discovery_harness.processes.loopback import LOOPBACK, ProcessPorts, inherited_env, loopback_env
from discovery_harness.processes.managed import ManagedProcess
from discovery_harness.runtime import dynamo_env, dynamo_src
from discovery_harness.runtime.launch import hugging_face_env
from discovery_harness.runtime.tier import CPU, TierPolicy

READY_DEADLINE_S = 60.0


@dataclass
class Frontend:
    proc: ManagedProcess
    base_url: str

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def log_since(self, offset: int) -> str:
        """Frontend log written after byte `offset` (one scenario's share of a shared log)."""
        with contextlib.suppress(FileNotFoundError), open(self.proc.log_path, "rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")
        return ""

    def log_offset(self) -> int:
        try:
            return self.proc.log_path.stat().st_size
        except FileNotFoundError:
            return 0


def _live(base_url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return (
            httpx.get(f"{base_url}/live", timeout=1.0, verify=shared_context()).status_code == 200
        )
    return False


# The image-URL request shape names an image the harness serves on 127.0.0.1 (there is no
# internet). Dynamo's media URL policy refuses http:// and loopback hosts unless this is set
# (measured on 1.6.1: the frontend answers 400 "Invalid request" before any worker sees the
# request; the same switch as dynamo/common/http/url_validator.py's for the workers).
MEDIA_FROM_LOOPBACK = {"DYN_MM_ALLOW_INTERNAL": "1"}


def start_frontend(
    endpoints: Endpoints,
    workdir: Path,
    scratch: Path,
    tier: TierPolicy = CPU,
    http_port: int | None = None,
    env: dict[str, str] | None = None,
    namespace: str | None = None,
) -> Frontend:
    """The frontend sees models the way the tier's workers do (same Hugging Face env).
    `http_port`: a port already allocated (a restart keeps its address); `env`: what a
    deployment sets for its workers and its own frontend (discovery backend, planes);
    `namespace`: watch that namespace only (a deployment's own frontend)."""
    http_port = http_port or ports.allocate_one()
    base_url = f"http://{LOOPBACK}:{http_port}"
    tmpdir = scratch / "frontend"
    env = {
        **inherited_env(),
        **loopback_env(
            endpoints.etcd,
            endpoints.nats,
            ProcessPorts.allocate(),
            tmpdir,
            dynamo_env.response_stream_host(LOOPBACK),
        ),
        **hugging_face_env(tier, scratch / "hf"),
        **MEDIA_FROM_LOOPBACK,
        **(env or {}),
    }
    env = dynamo_src.with_checkout(env)  # --dynamo-src: the checkout's dynamo.frontend
    proc = ManagedProcess(
        role="frontend",
        argv=[
            dynamo_env.active().python,
            "-m",
            "dynamo.frontend",
            "--http-host",
            LOOPBACK,
            "--http-port",
            str(http_port),
            *(["--namespace", namespace] if namespace else []),
        ],
        env=env,
        log_path=workdir / "logs" / "frontend.log",
    ).start()
    proc.wait_until(lambda: _live(base_url), f"GET {base_url}/live", Deadline(READY_DEADLINE_S))
    return Frontend(proc=proc, base_url=base_url)
