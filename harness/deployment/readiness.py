"""Readiness waits: on discovery events until every worker registered as declared (or the card
grace, a deadline or an exit decides otherwise), then until the frontend lists the model and
serves a request. Each wait takes the values it needs (an observer, a roster, a deadline),
never the deployment; what it finds is judged by discovery_harness.judge."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment import diagnosis
from discovery_harness.deployment.listing import ListingWatch
from discovery_harness.deployment.progress import LogMilestones
from discovery_harness.deployment.roster import Roster
from discovery_harness.deployment.worker import Worker
from discovery_harness.discovery.observer import DiscoveryObserver, DiscoveryState
from discovery_harness.judge import deployment as judged
from discovery_harness.judge.deployment import NOT_READY_STATUSES
from discovery_harness.model.violations import BAD_RESPONSE, NEVER_LISTED, Violation
from discovery_harness.serving.http_client import RecordingClient
from discovery_harness.serving.requests import Reply, send


class Exited(Exception):
    """A worker exited while the deployment waited on it."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker


def _guard(workers: Sequence[Worker]) -> Callable[[], None]:
    def dead_worker() -> None:
        for worker in workers:
            if not worker.proc.alive():
                raise Exited(worker)

    return dead_worker


@dataclass
class _Overdue:
    workers: list[Worker]


def await_registration(
    observer: DiscoveryObserver, roster: Roster, deadline: Deadline, card_grace: float
) -> list[Violation]:
    """Every registering worker has its instance and card; else who did not, and why: it
    exited, the deadline passed, or it served without a card for `card_grace` once every peer
    was serving."""
    registering = roster.registering
    serving_since: dict[str, float] = {}

    def probe(state: DiscoveryState) -> _Overdue | None:
        records = {w.role: roster.records(state, w) for w in registering}
        if all(r.registered for r in records.values()):
            return _Overdue([])
        if all(r.serving for r in records.values()):
            now = time.monotonic()
            overdue = []
            for worker in registering:
                if not records[worker.role].registered:
                    since = serving_since.setdefault(worker.role, now)
                    if now - since > card_grace:
                        overdue.append(worker)
            return _Overdue(overdue) if overdue else None
        return None

    try:
        verdict = observer.wait_for(probe, deadline, guard=_guard(roster.workers))
    except Exited as exited:
        state = observer.state()
        return [diagnosis.exited(exited.worker, state, roster.namespace, "its model card")]
    if verdict is not None and not verdict.workers:
        return []
    state = observer.state()
    missing = (
        verdict.workers
        if verdict
        else [w for w in registering if not roster.records(state, w).registered]
    )
    waited = (
        f"{card_grace:.0f} s after every peer was serving"
        if verdict
        else f"{deadline.seconds:.0f} s"
    )
    return [
        diagnosis.never_registered(w, roster.records(state, w), state, roster.namespace, waited)
        for w in missing
    ]


def await_turn(
    observer: DiscoveryObserver,
    roster: Roster,
    worker: Worker,
    explicit: bool,
    deadline: Deadline,
    card_grace: float,
) -> bool:
    """Whether the next worker may start. The layout's order: once this one serves (instance
    in etcd), False if it exited or the start deadline passed (the registration wait then
    reports it). An explicit order: once this one is registered, or after the card grace if it
    waits for peers before it serves (an encoder waits for its PD worker); False only if it
    exited."""
    wait = Deadline(min(card_grace, deadline.remaining)) if explicit else deadline

    def turn_taken(state: DiscoveryState) -> bool:
        records = roster.records(state, worker)
        return records.registered if explicit else records.serving

    try:
        taken = observer.wait_for(turn_taken, wait, guard=_guard([worker]))
    except Exited:
        return False
    return bool(taken) or explicit


def await_absent_settled(observer: DiscoveryObserver, roster: Roster, seconds: float) -> None:
    """Workers that must not register get the time to show it: until each has logged its
    stay-out line, written keys anyway (a violation the card checks report), or exited;
    at most `seconds`."""
    absent = [w for w in roster.workers if w.expected is None]
    if not absent:
        return
    logs = {w.role: LogMilestones.matching(w.proc.log_path, w.spec.stays_out_log) for w in absent}

    def settled(state: DiscoveryState) -> bool:
        return all(
            roster.records(state, w).instances
            or not w.proc.alive()
            or ((log := logs[w.role]) is not None and log.poll() is not None)
            for w in absent
        )

    observer.wait_for(settled, Deadline(seconds))


class Discovered(Protocol):
    """What discovery holds now (the deployment's DeploymentView)."""

    def missing_cards(self) -> list[str]: ...

    def keys_summary(self) -> str: ...


@dataclass(frozen=True)
class Serving:
    """What the served-wait needs of the deployment: values, and the parts it reads (its
    client, what discovery holds, its frontend's log), never the deployment itself."""

    model_name: str
    public_role: str
    kind: str  # the request kind that proves it serves (the topology's first)
    workers: tuple[Worker, ...]
    client: RecordingClient  # the deployment's: each probe's exchange is recorded there
    discovered: Discovered
    log_tail: Callable[[], str]  # the frontend's last lines since the deployment started

    def probe(self) -> Reply:
        """One request of `kind`, recorded as an exchange but not one of the test's replies."""
        return send(self.kind, self.client, self.model_name)

    def incomplete(self) -> bool:
        """Whether a worker's card is missing from etcd now (the topology cannot serve yet)."""
        return bool(self.discovered.missing_cards())


def await_served(listing: ListingWatch, serving: Serving, deadline: Deadline) -> list[Violation]:
    """Listed in /v1/models, then a real request answered 200 (readiness is a served request,
    not an open port or a listing)."""
    if not listing.wait(deadline):
        listing.stop()
        probe = serving.probe()
        return [
            Violation(
                NEVER_LISTED,
                serving.public_role,
                f"model '{serving.model_name}' never appeared in GET /v1/models within "
                f"{deadline.seconds:.0f} s of every worker registering; a "
                f"{probe.kind} request got {probe.status}: {probe.body[:300]}\n"
                f"{serving.discovered.keys_summary()}",
            )
        ]
    probes, early = probe_until_served(serving, deadline)
    found = listed_early(listing, serving, early)
    if not probes or probes[-1].status != 200:
        last = probes[-1] if probes else None
        found.append(
            Violation(
                BAD_RESPONSE,
                serving.public_role,
                f"model '{serving.model_name}' is listed but never served a {serving.kind} "
                f"request within {deadline.seconds:.0f} s; last answer: "
                f"{last.describe() if last else 'none'}",
                # When the answer came: finds its evidence and places it in a known window.
                at=_answered(serving, last),
            )
        )
    return found


def _answered(serving: Serving, reply: Reply | None) -> tuple[float, ...]:
    stamp = serving.client.answered_at(reply.request_id) if reply is not None else None
    return () if stamp is None else (stamp,)


def probe_until_served(serving: Serving, deadline: Deadline) -> tuple[list[Reply], list[Reply]]:
    """Every probe, and those refused before the topology could serve: a 404 or 503 ("not
    ready yet"), or any error while a worker's card is still missing from etcd (the model was
    listed early; what a half-registered topology answers is that listing's consequence, as
    1.0-1.2's decode refusing without its prefill: finding 6). Anything else is the answer."""
    probes: list[Reply] = []
    refused: list[Reply] = []
    guard = serving.workers[0].proc
    while not deadline.expired:
        reply = serving.probe()
        probes.append(reply)
        not_yet = reply.status in NOT_READY_STATUSES or (
            reply.status != 200 and serving.incomplete()
        )
        if not not_yet:
            break
        refused.append(reply)
        if not all(w.proc.alive() for w in serving.workers):
            break
        guard.popen_wait(deadline.slice(0.1))
    return probes, refused


def listed_early(listing: ListingWatch, serving: Serving, refused: list[Reply]) -> list[Violation]:
    """Listed while a worker's card was missing, or refused once listed (judged by
    discovery_harness.judge.deployment.listed_early)."""
    missing = set(listing.missing_when_listed)
    present = [
        w.expected for w in serving.workers if w.expected is not None and w.role not in missing
    ]
    return judged.listed_early(
        serving.model_name,
        listing.missing_when_listed,
        listing.ready_when_listed,
        present,
        refused,
        serving.log_tail() if refused else "",
    )
