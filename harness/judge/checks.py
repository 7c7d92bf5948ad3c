"""Contract checks: pure functions from observed state to violations.

They take what was observed (discovery state, HTTP exchanges, frontend log) and what was
declared (the topology's expected cards), so each can be unit-tested on hand-made state and
exercised end to end by the fault-injection self-tests.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.model.contract import EMPTY, ExpectedCard
from discovery_harness.model.records import Instance, ModelCard
from discovery_harness.model.violations import (
    BAD_RESPONSE,
    CARD_WITHOUT_INSTANCE,
    INTERFERENCE,
    INTERNAL_ADVERTISED,
    NON_LOOPBACK,
    REGISTERED_UNEXPECTEDLY,
    STATUS_503,
    WRONG_CARD,
    Violation,
)
from discovery_harness.serving.http_client import Exchange
from discovery_harness.serving.model_facts import CONTEXT_LENGTH_FLAG

GENERATE_ENDPOINT = "generate"


class WorkerView(Protocol):
    """What the checks need to know of a running worker."""

    @property
    def role(self) -> str: ...

    @property
    def component(self) -> str: ...

    @property
    def expected(self) -> ExpectedCard | None: ...  # None: it must not register

    @property
    def internal_endpoint(self) -> bool: ...  # with expected None: serves peers, no card

    @property
    def pid(self) -> int: ...

    @property
    def tcp_port(self) -> int | None: ...  # None: Dynamo chose it (not pinned)

    @property
    def registrants(self) -> int: ...

    @property
    def start_paths(self) -> tuple[str, ...]: ...  # the branches of dynamo.sglang it takes


def named(worker: WorkerView) -> str:
    """`worker 'mm-worker' (pid 123, start path init_multimodal_worker)`: the start path is
    where to read Dynamo's code."""
    paths = ", ".join(worker.start_paths) or "?"
    return f"worker '{worker.role}' ({_identity(worker)}, start path {paths})"


@dataclass(frozen=True)
class WorkerRecords:
    instances: list[Instance]  # every endpoint this worker's processes serve
    generates: list[Instance]  # its generate endpoints in the expected component
    cards: list[ModelCard]  # the base-model cards of those instances (LoRA cards aside)
    wanted: int = 1  # how many of its processes must register

    @property
    def generate(self) -> Instance | None:
        return self.generates[0] if self.generates else None

    @property
    def card(self) -> ModelCard | None:
        return self.cards[0] if self.cards else None

    @property
    def serving(self) -> bool:
        return len(self.generates) >= max(self.wanted, 1)

    @property
    def registered(self) -> bool:
        return len(self.cards) >= self.wanted and self.serving

    def all_keys(self) -> list[str]:
        return [i.key for i in self.instances] + [c.key for c in self.cards]


def records_for(
    state: DiscoveryState,
    namespace: str,
    worker: WorkerView,
    claimed_ports: frozenset[int] = frozenset(),
) -> WorkerRecords:
    """A worker's keys, by the TCP port the harness gave it: exact even when several workers
    share a component. A worker whose port Dynamo chose (it spawns processes that inherit
    its environment) owns the instances of its component on no port another worker holds."""
    instances = state.instances(namespace)
    if worker.tcp_port is not None:
        mine = [i for i in instances if i.tcp_port == worker.tcp_port]
    else:
        mine = [
            i
            for i in instances
            if i.component == worker.component and i.tcp_port not in claimed_ports
        ]
    generates = [
        i for i in mine if i.endpoint == GENERATE_ENDPOINT and i.component == worker.component
    ]
    ids = {(g.component, g.endpoint, g.instance_id) for g in generates}
    cards = [
        c
        for c in state.cards(namespace)
        if c.lora_name is None and (c.component, c.endpoint, c.instance_id) in ids
    ]
    return WorkerRecords(mine, generates, cards, worker.registrants)


def must_not_register(records: WorkerRecords, worker: WorkerView) -> list[Violation]:
    """A worker declared to stay out of discovery (a multi-node follower) wrote keys."""
    # An internal endpoint serves its peers by design: only a card of it is out of place.
    keys = [c.key for c in records.cards] if worker.internal_endpoint else records.all_keys()
    if worker.expected is not None or not keys:
        return []
    wrote = "registered" if worker.internal_endpoint else "serves or registered"
    return [
        Violation(
            REGISTERED_UNEXPECTEDLY,
            worker.role,
            f"{named(worker)} must not register, but it {wrote}: "
            f"{', '.join(keys)}; the frontend may route to it",
        )
    ]


def servable(present: list[ExpectedCard]) -> bool:
    """Dynamo's readiness rule applied to the declared contracts of the workers that have a
    card: some public worker, and every present worker's needs (an OR of ANDs) met by the
    roles present. Replicas of a role are interchangeable, so one of them is enough."""
    roles = {card.worker_type for card in present}
    if not any(card.public for card in present):
        return False
    return all(
        not card.needs or any(set(group) <= roles for group in card.needs) for card in present
    )


def _normalise_type(model_type: str) -> set[str]:
    return {part.strip() for part in model_type.split("|") if part.strip()}


def compare_card(worker: WorkerView, card: ModelCard, model_name: str) -> list[Violation]:
    """Each field of `card` against the worker's contract (a LoRA card is held to its
    worker's contract, under the LoRA's name)."""
    expected = worker.expected
    assert expected is not None, f"{worker.role} must not register: nothing to compare"
    who = named(worker)
    problems: list[Violation] = []
    actual_types = _normalise_type(card.model_type)
    wanted_types = _normalise_type(expected.model_type)
    if actual_types != wanted_types:
        if not expected.public and actual_types != {EMPTY}:
            problems.append(
                Violation(
                    INTERNAL_ADVERTISED,
                    worker.role,
                    f"{who} is internal but registered model type {card.model_type!r} for "
                    f"'{card.model_name}', which the frontend would advertise to clients "
                    f"(expected {expected.model_type!r}); card {card.key}",
                )
            )
        else:
            problems.append(
                _field(who, worker.role, "model_type", expected.model_type, card.model_type, card)
            )
    fields = (
        ("model_input", expected.model_input, card.model_input),
        ("worker_type", expected.worker_type, card.worker_type),
        ("needs", _needs(expected.needs), _needs(card.needs)),
        ("model name", model_name, card.model_name),
    )
    # A field declared None is not part of the contract (an era that did not fix it).
    problems += [
        _field(who, worker.role, n, w, a, card) for n, w, a in fields if w is not None and w != a
    ]
    missing = [key for key in expected.runtime_keys if key not in card.runtime_data]
    if missing:
        problems.append(
            _field(
                who,
                worker.role,
                "runtime data keys",
                str(missing),
                str(sorted(card.runtime_data)),
                card,
            )
        )
    return problems


# Dynamo 1.3's card has no `context_length`: only the model's architectural maximum, under
# this name (measured on 1.3.1's etcd record; 1.4 writes `context_length` again). It cannot
# carry a --context-length the worker was started with.
ARCHITECTURAL_CONTEXT = "architectural_max_context_length"


def context_lengths(records: WorkerRecords, worker: WorkerView) -> list[Violation]:
    """Each card's context length is the model's as the worker serves it: its config's, or
    the --context-length it was started with (a worker seen only in discovery: not known).
    A wrong one does not keep the model from serving, so it is judged with the answers."""
    wanted = getattr(worker, "context_length", None)
    if wanted is None:
        return []
    source = getattr(worker, "context_source", "")
    problems = []
    for card in records.cards:
        field = "context_length"
        if field not in card.raw and ARCHITECTURAL_CONTEXT in card.raw:
            if source.startswith(CONTEXT_LENGTH_FLAG):
                continue  # a 1.3 card says the config's maximum; the flag is not on it
            field = ARCHITECTURAL_CONTEXT
        if card.raw.get(field) != wanted:
            problems.append(
                Violation(
                    WRONG_CARD,
                    worker.role,
                    f"{named(worker)} registered a card with {field} "
                    f"{card.raw.get(field)!r}, expected {wanted} (the model's: {source}); "
                    f"card {card.key}",
                )
            )
    return problems


def _identity(worker: WorkerView) -> str:
    """How a message names the process: its pid, or (a worker the harness did not start,
    seen only in discovery) what its view says instead."""
    return getattr(worker, "identity", None) or f"pid {worker.pid}"


def _needs(needs: tuple[tuple[str, ...], ...]) -> str:
    groups = sorted("+".join(sorted(g.lower() for g in group)) for group in needs)
    return " | ".join(groups) or "-"


def _field(who: str, role: str, name: str, wanted: str, actual: str, card: ModelCard) -> Violation:
    return Violation(
        WRONG_CARD,
        role,
        f"{who} registered a card with {name} {actual!r}, expected {wanted!r}; card {card.key}",
    )


def cards_without_instances(state: DiscoveryState, namespace: str) -> list[Violation]:
    live = {(i.component, i.endpoint, i.instance_id) for i in state.instances(namespace)}
    return [
        Violation(
            CARD_WITHOUT_INSTANCE,
            None,
            f"model card {card.key} for '{card.model_name}' has no live instance "
            f"(no v1/instances/{namespace}/{card.component}/{card.endpoint}/"
            f"{card.instance_id:x}); the frontend will answer 503 for it",
        )
        for card in state.cards(namespace)
        if (card.component, card.endpoint, card.instance_id) not in live
    ]


_ADDRESS = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?")


def advertised_addresses(state: DiscoveryState, namespace: str) -> dict[str, set[str]]:
    """Every IPv4 address in the namespace's keys, by key."""
    found: dict[str, set[str]] = {}
    for key in state.keys(namespace):
        text = state.raw[key].decode(errors="replace")
        addresses = {a for a in _ADDRESS.findall(text) if _is_ip(a)}
        if addresses:
            found[key] = addresses
    return found


def non_loopback_addresses(state: DiscoveryState, namespace: str) -> list[Violation]:
    """Every IPv4 address a worker advertises in its keys must be 127.0.0.1."""
    return [
        Violation(NON_LOOPBACK, None, f"{key} advertises {address}, not 127.0.0.1")
        for key, addresses in advertised_addresses(state, namespace).items()
        for address in sorted(addresses)
        if address != "127.0.0.1"
    ]


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def bad_exchanges(
    exchanges: list[Exchange], labels: Mapping[str, str] | None = None
) -> list[Violation]:
    """Any 503 after readiness, and any other 4xx or 5xx for the (listed) model: a declared
    request answered 400 or 422 fails the verdict, not only the test's own assertion. A bad
    input's exchange is judged by its own rule (judge/bad_input.py). `labels` names each
    request id's shape (`image[size]`): the errors of one shape are one violation with that
    shape, so a release can declare the one shape it refuses."""
    problems: list[Violation] = []
    after = [e for e in exchanges if e.after_ready and not e.bad_input]
    unavailable = [e for e in after if e.status == 503]
    if unavailable:
        problems.append(
            Violation(
                STATUS_503,
                None,
                f"{len(unavailable)} response(s) with 503 after the topology was ready:\n"
                + "\n".join(f"    {e.describe()}" for e in unavailable),
                at=tuple(e.wall_time for e in unavailable),
            )
        )
    by_shape: dict[str | None, list[Exchange]] = {}
    for e in after:
        if e.status >= 400 and e.status != 503:
            by_shape.setdefault((labels or {}).get(e.request_id), []).append(e)
    for label, errors in by_shape.items():
        problems.append(
            Violation(
                BAD_RESPONSE,
                None,
                f"{len(errors)} error response(s) for a listed model"
                + (f" ({label})" if label else "")
                + ":\n"
                + "\n".join(f"    {e.describe()}" for e in errors),
                at=tuple(e.wall_time for e in errors),
                shape=label,
            )
        )
    return problems


def interference(
    state: DiscoveryState,
    namespace: str,
    ours: set[str],
    known_strays: dict[int, WorkerView] | None = None,
) -> list[Violation]:
    """Instances in the namespace that no worker of the deployment serves (`ours`: their
    keys), and the cards of those instances: another process serves or registers there (a
    leftover prefill worker makes an aggregated model unservable; a second card for the
    model can be rejected). One violation per process, named by role and pid when it is one
    the harness started, else by its address."""
    known_strays = known_strays or {}
    instances = state.instances(namespace)
    our_ids = {i.instance_id for i in instances if i.key in ours}
    foreign: dict[str, list[str]] = {}
    for instance in instances:
        if instance.instance_id not in our_ids:
            foreign.setdefault(_who(instance, known_strays), []).append(instance.key)
    by_id = {i.instance_id: i for i in instances}
    for card in state.cards(namespace):
        if card.instance_id not in our_ids:
            owner = by_id.get(card.instance_id)
            who = _who(owner, known_strays) if owner else f"instance {card.instance_id:x}"
            foreign.setdefault(who, []).append(card.key)
    return [
        Violation(
            INTERFERENCE,
            None,
            f"{who} is in namespace {namespace} but is not one of the deployment's workers "
            "(interference: it changes what the frontend serves for the model): "
            + ", ".join(sorted(keys)),
        )
        for who, keys in foreign.items()
    ]


def _who(instance: Instance, known_strays: dict[int, WorkerView]) -> str:
    stray = known_strays.get(instance.tcp_port) if instance.tcp_port is not None else None
    if stray is not None:
        return f"worker '{stray.role}' (pid {stray.pid})"
    return f"a process at {instance.transport.split('/', 1)[0]}"
