"""A worker lost and brought back, measured from etcd events and from a client's point of view.

`depart` signals one worker and measures how long its keys and the model's listing take to go,
while a bounded prober sends the topology's first request kind and tallies the statuses it
gets; `come_back` restarts it on new ports (as a real restart gets) and measures how long until
it is registered again, listed, and serving. The prober uses its own client: the gap's answers
are evidence for the report, not violations of the deployment's verdict.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment.core import Deployment
from discovery_harness.deployment.listing import await_listing
from discovery_harness.model.events import relisted_after_restart
from discovery_harness.serving.http_client import RecordingClient
from discovery_harness.serving.requests import Reply, send

PROBE_INTERVAL_S = 0.2
PROBE_LIMIT = 300  # at most this many gap probes, whatever the deadlines


@dataclass
class Departure:
    role: str
    signal: str
    keys: list[str]  # the worker's keys when it was signalled
    generate_gone_s: float | None  # signal -> its generate instance deleted (not routable)
    keys_gone_s: float | None  # signal -> the last of its keys deleted (None: still there)
    unlisted_s: float | None  # signal -> the model no longer in /v1/models (None: still listed)
    statuses: Counter[int] = field(default_factory=Counter)  # gap probes, by status
    escalated: bool = False  # still running a stop grace after the signal: SIGKILLed then

    def describe(self) -> str:
        return (
            f"{self.signal} '{self.role}': generate instance gone after "
            f"{_seconds(self.generate_gone_s)}, all its keys (card included) after "
            f"{_seconds(self.keys_gone_s)}, model "
            f"unlisted after {_seconds(self.unlisted_s)}; statuses during the gap: "
            f"{dict(sorted(self.statuses.items()))}"
            + ("; the process outlived its stop grace and was SIGKILLed" if self.escalated else "")
        )


@dataclass
class Return:
    role: str
    registered_s: float | None  # restart -> instance and card in etcd
    listed_s: float | None  # restart -> the model listed again
    replies: list[Reply]  # requests after it was listed again (recorded: judged by verify)
    statuses: Counter[int] = field(default_factory=Counter)  # gap probes until listed

    def describe(self) -> str:
        served = Counter(r.status for r in self.replies)
        return (
            f"restart '{self.role}': registered after {_seconds(self.registered_s)}, listed "
            f"after {_seconds(self.listed_s)}; statuses before it was listed: "
            f"{dict(sorted(self.statuses.items()))}; then {dict(sorted(served.items()))}"
        )


def depart(deployment: Deployment, role: str, sig: signal.Signals, within_s: float) -> Departure:
    """Signal `role` and watch its keys and the model's listing go, for `within_s` at most."""
    worker = deployment.worker(role)
    records = deployment.records(deployment.discovery_now(), worker)
    keys = records.all_keys()
    generate = [i.key for i in records.generates]
    observer = deployment.observer
    started = time.monotonic()
    with _Prober(deployment) as prober:
        deployment.kill(role, sig)
        # Its generate instance gone, the role is missing: /ready must say so and name it.
        if observer.wait_for(lambda s: not any(k in s.raw for k in generate), Deadline(within_s)):
            deployment.frontend_agreement.check(f"'{role}' stopped ({sig.name})")
        observer.wait_for(
            lambda state: not any(key in state.raw for key in keys), Deadline(within_s)
        )
        deleted = {
            e.key: e.mono_time
            for e in list(observer.events)
            if e.kind == "delete" and e.key in keys and e.mono_time >= started
        }
        gone = max(deleted.values()) - started if set(deleted) == set(keys) else None
        routable = [deleted[k] for k in generate if k in deleted]
        generate_gone = max(routable) - started if len(routable) == len(generate) else None
        unlisted = await_listing(
            deployment.client.base_url, deployment.plan.model_name, False, Deadline(within_s)
        )
    return Departure(
        role=role,
        signal=sig.name,
        keys=keys,
        generate_gone_s=generate_gone,
        keys_gone_s=gone,
        unlisted_s=None if unlisted is None else unlisted - started,
        statuses=prober.statuses,
        escalated=role in deployment.processes.escalated,
    )


def come_back(deployment: Deployment, role: str, within_s: float, requests: int = 5) -> Return:
    """Restart `role`, wait for its registration and the listing, then send `requests` of the
    topology's first kind through the deployment (so its verdict judges every answer)."""
    started = time.monotonic()
    with _Prober(deployment) as prober:
        deployment.restart(role)
        registered = deployment.await_registered(role, within_s)
        registered_at = time.monotonic() if registered else None
        listed = await_listing(
            deployment.client.base_url, deployment.plan.model_name, True, Deadline(within_s)
        )
    if listed is not None:  # a known violation's window may start here; /ready must agree
        deployment.frontend_agreement.check(f"'{role}' restarted and listed again")
        deployment.events.note(
            relisted_after_restart(role), time.time() - (time.monotonic() - listed)
        )
    kind = deployment.plan.topology.requests[0]
    replies = [deployment.send(kind) for _ in range(requests)]
    return Return(
        role=role,
        registered_s=None if registered_at is None else registered_at - started,
        listed_s=None if listed is None else listed - started,
        replies=replies,
        statuses=prober.statuses,
    )


class _Prober:
    """Sends the topology's first request kind every PROBE_INTERVAL_S on its own client,
    at most PROBE_LIMIT times, and tallies the statuses."""

    def __init__(self, deployment: Deployment) -> None:
        self._deployment = deployment
        self._client = RecordingClient(deployment.client.base_url, timeout=10.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gap-prober", daemon=True)
        self.statuses: Counter[int] = Counter()
        self._answered = threading.Condition()
        self._last: tuple[int, float] | None = None  # the latest probe's status and time

    def __enter__(self) -> _Prober:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        self._client.close()

    def _run(self) -> None:
        kind = self._deployment.plan.topology.requests[0]
        for _ in range(PROBE_LIMIT):
            if self._stop.is_set():
                return
            try:
                status = send(kind, self._client, self._deployment.plan.model_name).status
            except httpx.HTTPError:
                status = 0  # no answer at all (connection refused or reset)
            with self._answered:
                self.statuses[status] += 1
                self._last = (status, time.monotonic())
                self._answered.notify_all()
            self._stop.wait(PROBE_INTERVAL_S)

    def await_status(self, status: int, deadline: Deadline) -> float | None:
        """When (monotonic) a probe sent from now on was answered `status`; None if none by
        the deadline (or the probe budget ran out)."""
        since = time.monotonic()
        with self._answered:
            while not deadline.expired and self._thread.is_alive():
                last = self._last
                if last is not None and last[0] == status and last[1] >= since:
                    return last[1]
                self._answered.wait(deadline.slice(0.5))
        return None


def _seconds(value: float | None) -> str:
    return "never (within the deadline)" if value is None else f"{value:.2f} s"


@dataclass
class Recovery:
    """An infra disruption (etcd or NATS restarted, etcd paused) and what followed."""

    what: str
    disruption_s: float  # how long the disruption itself lasted
    served_again_s: float | None  # its end -> a request answered 200 (None: not by the deadline)
    keys_before: set[str]
    keys_after: set[str]
    statuses: Counter[int] = field(default_factory=Counter)  # probes during and after

    @property
    def same_registration(self) -> bool:
        """The workers' keys after are the ones before (nothing had to register again)."""
        return self.keys_before == self.keys_after

    def describe(self) -> str:
        keys = (
            "the same keys as before"
            if self.same_registration
            else f"keys before {len(self.keys_before)}, after {len(self.keys_after)} "
            f"({len(self.keys_after - self.keys_before)} new)"
        )
        return (
            f"{self.what} ({self.disruption_s:.1f} s): served again after "
            f"{_seconds(self.served_again_s)}; {keys}; statuses: "
            f"{dict(sorted(self.statuses.items()))}"
        )


def disrupt(
    deployment: Deployment, what: str, action: Callable[[], object], within_s: float
) -> Recovery:
    """Run `action` (the disruption) while probing, then probe until a request is answered
    200 again, for `within_s` at most."""
    before = _worker_keys(deployment)
    with _Prober(deployment) as prober:
        started = time.monotonic()
        action()
        ended = time.monotonic()
        served = prober.await_status(200, Deadline(within_s))
    return Recovery(
        what=what,
        disruption_s=ended - started,
        served_again_s=None if served is None else served - ended,
        keys_before=before,
        keys_after=_worker_keys(deployment),
        statuses=prober.statuses,
    )


def _worker_keys(deployment: Deployment) -> set[str]:
    state = deployment.discovery_now()
    workers = deployment.processes.workers
    return {k for w in workers for k in deployment.records(state, w).all_keys()}
