"""etcd and nats-server as local processes: private data dirs, free ports, loopback only."""

from __future__ import annotations

import os
import platform
import shutil
import signal
from pathlib import Path

from discovery_harness.common.deadline import Deadline
from discovery_harness.processes import ports
from discovery_harness.processes.infra.base import (
    Endpoints,
    InfraUnavailable,
    etcd_healthy,
    nats_connects,
)
from discovery_harness.processes.managed import ManagedProcess, stop_all

START_DEADLINE_S = 30.0


def _etcd_env() -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
    if platform.machine() in ("aarch64", "arm64"):
        env["ETCD_UNSUPPORTED_ARCH"] = "arm64"  # etcd 3.4 refuses to start on arm64 without it
    return env


class LocalProcessProvider:
    name = "process"

    def __init__(self) -> None:
        self._procs: list[ManagedProcess] = []

    def unavailable_reason(self) -> str | None:
        missing = [b for b in ("etcd", "nats-server") if shutil.which(b) is None]
        if missing:
            return (
                f"{' and '.join(missing)} not on PATH "
                "(Debian: apt-get install etcd-server nats-server; or run ci/setup.sh)"
            )
        return None

    def start(self, workdir: Path) -> Endpoints:
        reason = self.unavailable_reason()
        if reason:
            raise InfraUnavailable(f"process infra: {reason}")
        client, peer, nats_port, nats_monitor = ports.allocate(4)
        etcd_url = f"http://127.0.0.1:{client}"
        nats_url = f"nats://127.0.0.1:{nats_port}"
        etcd = ManagedProcess(
            role="etcd",
            argv=[
                shutil.which("etcd") or "etcd",
                "--name",
                "harness",
                "--data-dir",
                str(workdir / "etcd-data"),
                "--listen-client-urls",
                etcd_url,
                "--advertise-client-urls",
                etcd_url,
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"harness=http://127.0.0.1:{peer}",
                "--log-level",
                "warn",
            ],
            env=_etcd_env(),
            log_path=workdir / "logs" / "etcd.log",
        ).start()
        self._procs.append(etcd)
        nats = ManagedProcess(
            role="nats-server",
            argv=[
                shutil.which("nats-server") or "nats-server",
                "-a",
                "127.0.0.1",
                "-p",
                str(nats_port),
                "-m",
                str(nats_monitor),
                "-js",
                "-sd",
                str(workdir / "nats-data"),
            ],
            env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"},
            log_path=workdir / "logs" / "nats.log",
        ).start()
        self._procs.append(nats)
        deadline = Deadline(START_DEADLINE_S)
        etcd.wait_until(lambda: etcd_healthy(etcd_url), f"GET {etcd_url}/health", deadline)
        nats.wait_until(lambda: nats_connects(nats_url), f"NATS connect {nats_url}", deadline)
        return Endpoints(etcd=etcd_url, nats=nats_url, provider=self.name)

    def stop(self) -> None:
        stop_all(self._procs, grace=5.0)
        self._procs.clear()

    # -- disruptions (edge tests): only this provider owns its processes -------------------
    def _service(self, name: str) -> ManagedProcess:
        found = [p for p in self._procs if p.role == name]
        if not found:
            raise ValueError(f"no {name} here; services: {[p.role for p in self._procs]}")
        return found[-1]

    def restart(self, name: str, endpoints: Endpoints) -> None:
        """Stop etcd or nats-server (SIGTERM) and start it again on the same port and data
        directory; return once it serves again."""
        old = self._service(name)
        old.stop(grace=5.0)
        self._procs.remove(old)
        again = ManagedProcess(old.role, list(old.argv), dict(old.env), old.log_path).start()
        self._procs.append(again)
        deadline = Deadline(START_DEADLINE_S)
        if name == "etcd":
            again.wait_until(lambda: etcd_healthy(endpoints.etcd), "etcd /health", deadline)
        else:
            again.wait_until(lambda: nats_connects(endpoints.nats), "NATS connect", deadline)

    def pause(self, name: str) -> None:
        """SIGSTOP: the process stays, answers nothing (a network partition, a GC pause)."""
        os.killpg(self._service(name).pid, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        os.killpg(self._service(name).pid, signal.SIGCONT)
