"""How a deployment runs: deadlines (Settings), the discovery backend and planes (Planes),
which frontend it talks to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.runtime.spawn import FRESH, ZYGOTE
from harness.topology import Scenario

NOT_READY_STATUSES = (404, 503)
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


# Default deadlines, seconds. CPU tier: a worker forked from the template serves in well under
# a second; 2-3 fresh ones importing at once on 2 cores take up to 30 s. A card lands within a
# second of its instance (0-0.7 s measured on 1.6.1); listing follows the last card by
# 30-100 ms. The GPU tier's register deadline is each layout's start timeout.
CPU_REGISTER_FORKED_S, CPU_REGISTER_FRESH_S = 30.0, 120.0
CARD_GRACE_S = {"cpu": 5.0, "gpu": 60.0}
LIST_DEADLINE_S = {"cpu": 10.0, "gpu": 30.0}


def describe_default_deadlines(tier: str) -> str:
    """The defaults as `plan` prints them (read from the values the run uses)."""
    register = (
        f"register {CPU_REGISTER_FORKED_S:g} s forked from the template, "
        f"{CPU_REGISTER_FRESH_S:g} s fresh"
        if tier == "cpu"
        else "register = the layout's start timeout"
    )
    return f"{register}, card grace {CARD_GRACE_S[tier]:g} s, list {LIST_DEADLINE_S[tier]:g} s"


@dataclass(frozen=True)
class Settings:
    """Deadlines. The CPU tier's are tight where its starts are fast; the GPU tier's follow
    each layout."""

    tier: str = "cpu"
    spawn: str = FRESH  # CPU tier: how workers start (harness.runtime.spawn)
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
        if self.tier != "cpu":
            return float(scenario.placement.start_timeout_s)
        if scenario.topology.cpu_register_deadline_s is not None:
            return scenario.topology.cpu_register_deadline_s
        if forked is None:
            forked = self.spawn == ZYGOTE
        return CPU_REGISTER_FORKED_S if forked else CPU_REGISTER_FRESH_S

    @property
    def card_grace(self) -> float:
        if self.card_grace_s is not None:
            return self.card_grace_s
        return CARD_GRACE_S[self.tier]

    @property
    def list_deadline(self) -> float:
        if self.list_deadline_s is not None:
            return self.list_deadline_s
        return LIST_DEADLINE_S[self.tier]
