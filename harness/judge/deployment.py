"""The verdict on a deployment whose workers are known: what each must register, what the
frontend listed and when, what the requests got. Pure: the caller observed; this judges."""

from __future__ import annotations

from collections.abc import Sequence

from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge import bad_input, checks, incompatible
from discovery_harness.judge.checks import WorkerRecords, WorkerView
from discovery_harness.model.contract import ExpectedCard
from discovery_harness.model.records import Instance
from discovery_harness.model.violations import BAD_CONTENT, LISTED_EARLY, Violation
from discovery_harness.serving.http_client import Exchange
from discovery_harness.serving.requests import BAD_INPUT, Reply

NOT_READY_STATUSES = (404, 503)  # "not ready yet" from the frontend; after listing, a fault


def worker_records(
    state: DiscoveryState, namespace: str, worker: WorkerView, workers: Sequence[WorkerView]
) -> WorkerRecords:
    """A worker's keys in the namespace (see checks.records_for): the ports the other
    workers were given are theirs."""
    claimed = frozenset(w.tcp_port for w in workers if w.tcp_port is not None)
    records = checks.records_for(state, namespace, worker, claimed)
    sharing = [w for w in workers if w.tcp_port is None and w.component == worker.component]
    if worker.tcp_port is not None or len(sharing) < 2:
        return records
    return _shared_out(records, worker, sharing)


def _shared_out(
    component: WorkerRecords, worker: WorkerView, sharing: Sequence[WorkerView]
) -> WorkerRecords:
    """Workers of one component with no port to tell them apart (the NATS request plane of
    Dynamo 0.7, a multi-node leader and its follower): the instances are dealt out by count.
    Each worker that serves takes as many as it has registrants, a card-bearing one for a
    registering worker, in declaration order; a worker that must not register holds what is
    left, so a follower that registers beside its leader is still caught (the extra instance
    is its). One case it cannot see: a follower that registers while its leader does not."""
    carded = {c.instance_id for c in component.cards}
    pool = sorted(component.generates, key=lambda g: (g.instance_id not in carded, g.key))
    dealt: dict[str, list[Instance]] = {}
    for peer in sharing:
        if peer.expected is None and not peer.internal_endpoint:
            continue
        for _ in range(max(peer.registrants, 1)):
            wants_card = peer.expected is not None
            pick = next((g for g in pool if (g.instance_id in carded) == wants_card), None)
            if pick is None and pool:
                pick = pool[0]
            if pick is None:
                break
            pool.remove(pick)
            dealt.setdefault(peer.role, []).append(pick)
    serves = worker.expected is not None or worker.internal_endpoint
    mine = dealt.get(worker.role, []) if serves else pool
    ids = {g.instance_id for g in mine}
    return WorkerRecords(
        [i for i in component.instances if i.instance_id in ids],
        mine,
        [c for c in component.cards if c.instance_id in ids],
        component.wanted,
    )


def card_violations(
    state: DiscoveryState,
    namespace: str,
    model_name: str,
    workers: Sequence[WorkerView],
    strays: Sequence[WorkerView] = (),
) -> list[Violation]:
    """Every worker's cards against its contract, then what the namespace holds besides."""
    found: list[Violation] = []
    for worker in workers:
        records = worker_records(state, namespace, worker, workers)
        found += checks.must_not_register(records, worker)
        if worker.expected is not None:
            for card in records.cards:
                found += checks.compare_card(worker, card, model_name)
    found += checks.cards_without_instances(state, namespace)
    found += checks.non_loopback_addresses(state, namespace)
    found += interference(state, namespace, workers, strays)
    return found


def interference(
    state: DiscoveryState,
    namespace: str,
    workers: Sequence[WorkerView],
    strays: Sequence[WorkerView] = (),
) -> list[Violation]:
    """Keys in the namespace that none of its workers wrote (named when the stray is a
    process the harness started on purpose)."""
    ours = {i.key for w in workers for i in worker_records(state, namespace, w, workers).instances}
    named = {w.tcp_port: w for w in strays if w.tcp_port is not None}
    return checks.interference(state, namespace, ours, named)


def listed_early(
    model_name: str,
    missing_when_listed: Sequence[str],
    ready_when_listed: str,
    present: Sequence[ExpectedCard],
    refused: Sequence[Reply],
    frontend_log_tail: str,
) -> list[Violation]:
    """Listed before its topology could serve: a role's card was missing from discovery when
    the model first appeared in /v1/models (and the cards present could not serve it), or
    requests for the listed model were refused before it could (404/503, or any error while
    a role's card was missing)."""
    evidence = []
    if missing_when_listed and not checks.servable(list(present)):
        evidence.append(
            # A card counts once its worker's instance serves (0.7 wrote cards first).
            "etcd had no serving instance with a model card yet for "
            + ", ".join(f"'{r}'" for r in missing_when_listed)
            + " when the model first appeared in /v1/models (the frontend's own view "
            + f"then: {ready_when_listed})"
        )
    if refused:
        statuses = "/".join(sorted({str(p.status) for p in refused}))
        evidence.append(
            f"{len(refused)} request(s) for the listed model got {statuses} "
            f"({refused[0].body[:120]}); the frontend's log meanwhile:\n"
            f"{frontend_log_tail}"
        )
    if not evidence:
        return []
    return [
        Violation(
            LISTED_EARLY,
            None,
            f"model '{model_name}' was listed before its topology could serve it: "
            + "; ".join(evidence)
            + "; clients see the model but their requests fail",
        )
    ]


def after_ready(
    state: DiscoveryState,
    namespace: str,
    model_name: str,
    workers: Sequence[WorkerView],
    strays: Sequence[WorkerView],
    exchanges: Sequence[Exchange],
    replies: Sequence[Reply],
    frontend_log: str,
) -> list[Violation]:
    """What went wrong once the deployment was ready: refused or bad answers, workers the
    frontend rejected, and discovery's state now."""
    labels = {r.request_id: r.label for r in replies if r.request_id}
    violations = checks.bad_exchanges(list(exchanges), labels)
    replies = answered_once_ready(exchanges, replies)
    answers = [r for r in replies if r.purpose != BAD_INPUT]
    violations += [bad_answer(r, workers) for r in answers if not r.ok and r.status == 200]
    violations += bad_input.violations(replies, *serving_role(workers))
    violations += incompatible.incompatible_workers(frontend_log, model_name)
    for worker in workers:
        records = worker_records(state, namespace, worker, workers)
        violations += checks.must_not_register(records, worker)
        violations += checks.context_lengths(records, worker)
    violations += interference(state, namespace, workers, strays)
    violations += checks.cards_without_instances(state, namespace)
    violations += checks.non_loopback_addresses(state, namespace)
    return violations


def answered_once_ready(exchanges: Sequence[Exchange], replies: Sequence[Reply]) -> list[Reply]:
    """The replies whose exchange came once the deployment was ready: a model that never
    became ready (a release known never to list it) has answers that are that finding's."""
    before = {e.request_id for e in exchanges if not e.after_ready and e.request_id}
    return [r for r in replies if r.request_id not in before]


def serving_role(workers: Sequence[WorkerView]) -> tuple[str, str]:
    """The worker that serves the topology's public model (the role the frontend routes its
    requests to), and ` (with … behind it)` naming the rest."""
    public = [w.role for w in workers if w.expected is not None and w.expected.public]
    roles = public or [w.role for w in workers] or ["?"]
    behind = [w.role for w in workers if w.role != roles[0]]
    return roles[0], f" (with {', '.join(behind)} behind it)" if behind else ""


def bad_answer(reply: Reply, workers: Sequence[WorkerView]) -> Violation:
    """A 200 whose answer breaks what its API promises, named by the worker that serves the
    topology's public model."""
    role, pipeline = serving_role(workers)
    return Violation(
        BAD_CONTENT,
        role,
        f"{reply.kind} answer (shape {reply.shape}) of worker '{role}'{pipeline} broke its "
        f"API: 200, but "
        f"{reply.problem}; {reply.describe()}",
        shape=reply.label,
    )
