"""etcd and NATS as containers through testcontainers (any Docker-API engine: Docker, podman).

Images are pinned. Published ports are bound to 127.0.0.1 explicitly: testcontainers'
random published ports would bind 0.0.0.0. The deadline on each wait comes from the
strategy, and a failed start carries the container's logs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from discovery_harness.processes import ports
from discovery_harness.processes.infra.base import Endpoints, InfraUnavailable, nats_connects

ETCD_IMAGE = os.environ.get("HARNESS_ETCD_IMAGE", "quay.io/coreos/etcd:v3.4.23")
NATS_IMAGE = os.environ.get("HARNESS_NATS_IMAGE", "docker.io/library/nats:2.9.10")
READY_TIMEOUT_S = 60
PING_TIMEOUT_S = 20


def _docker_reachable() -> str | None:
    client = None
    try:
        import docker

        # A socket that answers refuses at once; a cold engine (podman's API service, a
        # loaded machine) may take seconds for its first answer.
        client = docker.from_env(timeout=PING_TIMEOUT_S)
        client.ping()
    except Exception as exc:
        return f"no Docker-API engine reachable ({type(exc).__name__}: {exc})"
    finally:
        if client is not None:
            client.close()
    return None


class DockerProvider:
    name = "docker"

    def __init__(self) -> None:
        self._containers: list[Any] = []

    def unavailable_reason(self) -> str | None:
        return _docker_reachable()

    def start(self, workdir: Path) -> Endpoints:
        reason = self.unavailable_reason()
        if reason:
            raise InfraUnavailable(f"docker infra: {reason}")
        # testcontainers reads these at import; a VM with /.dockerenv confuses its
        # in-container detection, and Ryuk's image may not be pullable.
        os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")
        os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
        etcd_port, nats_port = ports.allocate(2)
        try:
            etcd_url = self._start_etcd(etcd_port)
            nats_url = self._start_nats(nats_port)
        except Exception as exc:
            logs = self._logs()
            self.stop()
            raise InfraUnavailable(f"docker infra failed to start: {exc}\n{logs}") from exc
        if not nats_connects(nats_url):
            self.stop()
            raise InfraUnavailable(f"NATS container at {nats_url} refused a client connection")
        return Endpoints(etcd=etcd_url, nats=nats_url, provider=self.name)

    def _start_etcd(self, host_port: int) -> str:
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.wait_strategies import HttpWaitStrategy

        container = (
            DockerContainer(ETCD_IMAGE)
            .with_command(
                [
                    "/usr/local/bin/etcd",
                    "--name",
                    "harness",
                    "--data-dir",
                    "/tmp/etcd-data",
                    "--listen-client-urls",
                    "http://0.0.0.0:2379",
                    "--advertise-client-urls",
                    f"http://127.0.0.1:{host_port}",
                ]
            )
            .waiting_for(
                HttpWaitStrategy(2379, "/health")
                .for_status_code(200)
                .for_response_predicate(lambda body: '"health":"true"' in body.replace(" ", ""))
                .with_startup_timeout(READY_TIMEOUT_S)
            )
        )
        container.ports["2379/tcp"] = ("127.0.0.1", host_port)
        self._containers.append(container)
        container.start()
        return f"http://127.0.0.1:{host_port}"

    def _start_nats(self, host_port: int) -> str:
        from testcontainers.community.nats import NatsContainer

        container = NatsContainer(NATS_IMAGE, jetstream=True, ready_timeout_secs=READY_TIMEOUT_S)
        container.ports = {"4222/tcp": ("127.0.0.1", host_port)}
        self._containers.append(container)
        container.start()
        return f"nats://127.0.0.1:{host_port}"

    def _logs(self) -> str:
        out = []
        for container in self._containers:
            with contextlib.suppress(Exception):
                stdout, stderr = container.get_logs()
                out.append(f"--- {container.image} ---\n{(stdout + stderr).decode()[-2000:]}")
        return "\n".join(out)

    def stop(self) -> None:
        for container in reversed(self._containers):
            with contextlib.suppress(Exception):
                container.stop()
        self._containers.clear()
