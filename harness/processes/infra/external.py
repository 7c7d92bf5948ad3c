"""Use etcd and NATS the caller already runs (ETCD_ENDPOINTS / NATS_SERVER)."""

from __future__ import annotations

import os
from pathlib import Path

from discovery_harness.processes.infra.base import (
    Endpoints,
    InfraUnavailable,
    etcd_healthy,
    nats_connects,
)


class ExternalProvider:
    name = "external"

    def unavailable_reason(self) -> str | None:
        missing = [v for v in ("ETCD_ENDPOINTS", "NATS_SERVER") if not os.environ.get(v)]
        return f"{' and '.join(missing)} not set" if missing else None

    def start(self, workdir: Path) -> Endpoints:
        reason = self.unavailable_reason()
        if reason:
            raise InfraUnavailable(f"external infra: {reason}")
        etcd = os.environ["ETCD_ENDPOINTS"].split(",")[0].strip()
        if "://" not in etcd:
            etcd = f"http://{etcd}"
        nats = os.environ["NATS_SERVER"]
        if not etcd_healthy(etcd):
            raise InfraUnavailable(f"external etcd at {etcd} is not healthy (GET /health)")
        if not nats_connects(nats):
            raise InfraUnavailable(f"external NATS at {nats} refused a client connection")
        return Endpoints(etcd=etcd, nats=nats, provider=self.name)

    def stop(self) -> None:
        """Nothing to stop: the caller owns these services."""
