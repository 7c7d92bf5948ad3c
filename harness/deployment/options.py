"""How a deployment runs: deadlines (Settings), the discovery backend and planes (Planes),
which frontend it talks to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from discovery_harness.model.topology import Scenario
from discovery_harness.runtime.spawn import FRESH, ZYGOTE
from discovery_harness.runtime.tier import CPU, TierPolicy

# Which frontend a deployment talks to: the session's, its own from the start, or its own
# started only once every worker has registered (discovery of what is already there).
SHARED, OWN, LATE = "shared", "own", "late"
FRONTEND_MODES = (SHARED, OWN, LATE)
ETCD, FILE, TCP, NATS, ZMQ = "etcd", "file", "tcp", "nats", "zmq"


@dataclass(frozen=True)
class Planes:
    """Where discovery lives and how requests and events travel (the session's: etcd, TCP,
    NATS). Anything else is set for the deployment's workers and its own frontend."""

    discovery: str = ETCD  # or "file": Dynamo's file store, in the deployment's folder
    request: str = TCP  # or "nats"
    event: str = NATS  # or "zmq"

    def env(self, file_store: Path) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.discovery == FILE:
            env |= {"DYN_DISCOVERY_BACKEND": "file", "DYN_FILE_KV": str(file_store)}
        elif self.discovery != ETCD:
            raise ValueError(f"discovery must be etcd or file, not {self.discovery!r}")
        if self.request != TCP:
            env["DYN_REQUEST_PLANE"] = self.request
        if self.event != NATS:
            env["DYN_EVENT_PLANE"] = self.event
        return env

    def describe(self) -> str:
        return f"discovery {self.discovery}, request plane {self.request}, events {self.event}"


@dataclass(frozen=True)
class Settings:
    """The run's tier and deadlines: the tier's defaults (discovery_harness.runtime.tier) unless an
    option sets one."""

    tier: TierPolicy = CPU
    spawn: str = FRESH  # CPU tier: how workers start (discovery_harness.runtime.spawn)
    register_deadline_s: float | None = None  # None: see register_deadline()
    card_grace_s: float | None = None  # instance without card, once every peer serves
    list_deadline_s: float | None = None  # from the last card to the model in /v1/models
    stop_grace_s: float = 15.0

    def register_deadline(self, scenario: Scenario, forked: bool | None = None) -> float:
        """For every worker to serve and register, from the deployment's start. `forked`:
        whether this deployment's workers come from the template (default: the session's
        spawn mode)."""
        if self.register_deadline_s is not None:
            return self.register_deadline_s
        if forked is None:
            forked = self.spawn == ZYGOTE
        return self.tier.deadlines.register(scenario, forked)

    @property
    def card_grace(self) -> float:
        if self.card_grace_s is not None:
            return self.card_grace_s
        return self.tier.deadlines.card_grace_s

    @property
    def list_deadline(self) -> float:
        if self.list_deadline_s is not None:
            return self.list_deadline_s
        return self.tier.deadlines.list_deadline_s
