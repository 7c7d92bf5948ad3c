"""What every infra provider offers, and the readiness probes they share."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx

from discovery_harness.common.tls import shared_context


class InfraUnavailable(RuntimeError):
    """This provider cannot run here; the message says what to install or set."""


@dataclass(frozen=True)
class Endpoints:
    etcd: str  # http://127.0.0.1:PORT
    nats: str  # nats://127.0.0.1:PORT
    provider: str


class Provider(Protocol):
    name: str

    def unavailable_reason(self) -> str | None:
        """None when this provider can start here, else why not."""

    def start(self, workdir: Path) -> Endpoints: ...

    def stop(self) -> None: ...


def etcd_healthy(url: str) -> bool:
    """etcd answers /health with {"health": "true"} once it can serve reads and writes."""
    with contextlib.suppress(httpx.HTTPError, ValueError):
        reply = httpx.get(f"{url}/health", timeout=1.0, verify=shared_context())
        return reply.status_code == 200 and reply.json().get("health") == "true"
    return False


def nats_connects(url: str) -> bool:
    """A real client handshake, not just an open port."""

    async def attempt() -> bool:
        import nats

        client = await nats.connect(
            url, connect_timeout=1, max_reconnect_attempts=0, allow_reconnect=False
        )
        await client.close()
        return True

    try:
        return asyncio.run(attempt())
    except Exception:
        return False
