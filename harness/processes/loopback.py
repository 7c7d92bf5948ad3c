"""The environment that keeps every Dynamo process on 127.0.0.1.

Dynamo picks hosts and ports for its TCP request plane, response streams, system server and
event plane from the environment; left alone it binds 0.0.0.0 and random ports. This module
builds one environment per process with every address pinned to loopback and every port
taken from the harness's allocator. Where models come from (offline local dirs, or a
Hugging Face cache) is the tier's business: see discovery_harness.runtime.launch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from discovery_harness.processes import ports

LOOPBACK = "127.0.0.1"
HEALTH_CHECK_LOG_FILTER = "info,dynamo_runtime::health_check=debug"

# Variables inherited from the caller's shell that would silently change what we test.
_SCRUBBED = (
    "DYN_NAMESPACE",  # the frontend reads it too: it would scope discovery to one namespace
    "DYN_DISCOVERY_BACKEND",
    "DYN_REQUEST_PLANE",
    "ETCD_ENDPOINTS",
    "NATS_SERVER",
    "CUDA_VISIBLE_DEVICES",
    "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
    # Per-process ports: the harness gives each process its own (or leaves them to Dynamo).
    "DYN_TCP_RPC_PORT",
    "DYN_TCP_RESPONSE_STREAM_PORT",
    "DYN_SYSTEM_PORT",
    # Set by pytest per test phase; libraries read it at import to detect a test run.
    "PYTEST_CURRENT_TEST",
)


@dataclass(frozen=True)
class ProcessPorts:
    """The ports one Dynamo process listens on."""

    tcp_rpc: int
    tcp_response_stream: int
    system: int
    bootstrap: int

    @classmethod
    def allocate(cls) -> ProcessPorts:
        return cls(*ports.allocate(4))

    def all(self) -> list[int]:
        return [self.tcp_rpc, self.tcp_response_stream, self.system, self.bootstrap]


def inherited_env() -> dict[str, str]:
    """The caller's environment without the variables that would change what we test."""
    return {k: v for k, v in os.environ.items() if k not in _SCRUBBED}


def offline_hf_env(hf_home: Path) -> dict[str, str]:
    """No Hugging Face hub at all: for processes whose models are local directories. One
    private HF_HOME per run (the worker template's): huggingface_hub reads it once, at import."""
    return {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(hf_home),
    }


def session_env(
    etcd_endpoint: str, nats_url: str, response_stream_host: str = LOOPBACK
) -> dict[str, str]:
    """What every Dynamo process of a session shares: discovery, loopback hosts, planes.
    `response_stream_host`: the loopback as the running release spells it (1.0-1.5 read an
    interface name there: discovery_harness.runtime.dynamo_env.response_stream_host)."""
    return {
        "ETCD_ENDPOINTS": etcd_endpoint,
        "NATS_SERVER": nats_url,
        **run_env(response_stream_host),
    }


def run_env(response_stream_host: str = LOOPBACK) -> dict[str, str]:
    """What every Dynamo process of the run shares, whichever session's: session_env without
    its etcd and NATS (what one worker template serving every session of a run may hold)."""
    return {
        "DYN_DISCOVERY_BACKEND": "etcd",
        "DYN_TCP_RPC_HOST": LOOPBACK,
        "DYN_TCP_RESPONSE_STREAM_HOST": response_stream_host,
        "DYN_SYSTEM_HOST": LOOPBACK,
        "DYN_EVENT_PLANE_HOST": LOOPBACK,
        "SGLANG_HOST_IP": LOOPBACK,
        "DYN_EVENT_PLANE": "nats",
        # Read once, at import (the worker template's too): the runtime's canary lines are
        # debug-level, and they are how the harness counts each worker's health checks.
        "DYN_LOG": HEALTH_CHECK_LOG_FILTER,
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def process_env(process_ports: ProcessPorts, tmpdir: Path) -> dict[str, str]:
    """What each process has to itself: its ports and its TMPDIR (created here)."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    return {
        "DYN_TCP_RPC_PORT": str(process_ports.tcp_rpc),
        "DYN_TCP_RESPONSE_STREAM_PORT": str(process_ports.tcp_response_stream),
        "DYN_SYSTEM_PORT": str(process_ports.system),
        "TMPDIR": str(tmpdir),
    }


def loopback_env(
    etcd_endpoint: str,
    nats_url: str,
    process_ports: ProcessPorts,
    tmpdir: Path,
    response_stream_host: str = LOOPBACK,
) -> dict[str, str]:
    """What the harness sets for every Dynamo process: discovery, loopback hosts, own ports,
    own TMPDIR (created here)."""
    shared = session_env(etcd_endpoint, nats_url, response_stream_host)
    return {**shared, **process_env(process_ports, tmpdir)}
