"""Runtime registration: LoRA adapters loaded into and unloaded from running workers.

A worker serves `POST /v1/loras` and `DELETE /v1/loras/{name}` on its system port (Dynamo's
system status server); a load publishes a LoRA model card next to the worker's base card
(`v1/mdc/{ns}/{component}/generate/{id}/{lora}`), an unload removes it. The LoRA card must
take the base card's role: on a prefill worker it stays Prefill, never a public Chat surface
(Dynamo PR #8945). These are checked like start-up registration, from etcd.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from discovery_harness.common.deadline import Deadline
from discovery_harness.common.tls import shared_context
from discovery_harness.deployment.core import Deployment
from discovery_harness.deployment.fingerprint import differences, discovery_fingerprint
from discovery_harness.deployment.worker import Worker
from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge.answer_evidence import WORKER_MARGIN_S, block, errors_in_window
from discovery_harness.judge.checks import WorkerView, compare_card, named
from discovery_harness.model.events import LORA_LISTED
from discovery_harness.model.records import ModelCard
from discovery_harness.model.stand_in_blame import reclassify
from discovery_harness.model.violations import (
    LORA_LEFT_BEHIND,
    LORA_REFUSED,
    NEVER_REGISTERED,
    REGISTERED_UNEXPECTEDLY,
    ContractFailure,
    Violation,
)
from discovery_harness.processes.managed import without_colours
from discovery_harness.runtime.models import locate
from discovery_harness.serving.requests import LORA_CYCLE

LORA_TIMEOUT_S = 60.0
LORA_NAME = "harness-lora"  # the adapter's served name in every runtime cycle
_POLL_S = 0.05


@dataclass(frozen=True)
class LoraAnswer:
    """The worker's answer to a load or unload."""

    role: str
    action: str
    status: int
    body: str
    sent_at: float = 0.0  # its window in the worker's log
    answered_at: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == 200 and '"success"' in self.body

    def describe(self) -> str:
        return f"{self.action} on '{self.role}' -> {self.status}: {self.body[:300]}"


def load(system_port: int, role: str, name: str, adapter: Path) -> LoraAnswer:
    payload = {"lora_name": name, "source": {"uri": adapter.resolve().as_uri()}}
    url = f"http://127.0.0.1:{system_port}/v1/loras"
    sent_at = time.time()
    response = httpx.post(url, json=payload, timeout=LORA_TIMEOUT_S, verify=shared_context())
    status, body = response.status_code, response.text
    return LoraAnswer(role, f"load_lora {name}", status, body, sent_at, time.time())


def unload(system_port: int, role: str, name: str) -> LoraAnswer:
    url = f"http://127.0.0.1:{system_port}/v1/loras/{name}"
    sent_at = time.time()
    response = httpx.delete(url, timeout=LORA_TIMEOUT_S)
    status, body = response.status_code, response.text
    return LoraAnswer(role, f"unload_lora {name}", status, body, sent_at, time.time())


def lora_cards(state: DiscoveryState, namespace: str, name: str) -> list[ModelCard]:
    return [c for c in state.cards(namespace) if c.lora_name == name]


def lora_violations(
    worker: WorkerView, cards: list[ModelCard], name: str, loaded: bool
) -> list[Violation]:
    """A loaded LoRA has exactly one card on the worker, of the worker's own role; an
    unloaded one has none."""
    who = named(worker)
    if not loaded:
        return [
            Violation(
                REGISTERED_UNEXPECTEDLY,
                worker.role,
                f"{who} still has a card for LoRA '{name}' after unload_lora: {card.key}",
            )
            for card in cards
        ]
    if not cards:
        return [
            Violation(
                NEVER_REGISTERED,
                worker.role,
                f"{who} was asked to load LoRA '{name}' but no LoRA card appeared under its "
                "instance (waiting for v1/mdc/…/generate/{id}/" + name + ")",
            )
        ]
    return [v for card in cards for v in compare_card(worker, card, name)]


class LoraControl:
    """Load and unload one LoRA on every registering worker of a deployment, and judge the
    cards that come and go (raises ContractFailure, naming the worker and the card)."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.answers: list[LoraAnswer] = []

    def _workers(self) -> list[Worker]:
        return [w for w in self.deployment.processes.workers if w.registers]

    def load(self, name: str) -> list[LoraAnswer]:
        adapter = self._adapter()
        answers = [load(w.ports.system, w.role, name, adapter) for w in self._workers()]
        self.answers += answers
        return answers

    def unload(self, name: str) -> list[LoraAnswer]:
        answers = [unload(w.ports.system, w.role, name) for w in self._workers()]
        self.answers += answers
        return answers

    def check_answers(self) -> None:
        """Every load and unload so far was accepted; else one typed violation per refusal,
        naming the worker and Dynamo's answer (raises ContractFailure)."""
        by_role = {w.role: w for w in self._workers()}
        refused = [
            Violation(
                LORA_REFUSED,
                answer.role,
                f"{named(by_role[answer.role])} refused {answer.action}: Dynamo answered "
                f"{answer.status}: {answer.body[:300]}",
                evidence=_worker_side(by_role[answer.role], answer),
            )
            for answer in self.answers
            if not answer.ok
        ]
        if refused:  # a stand-in's error passed on by Dynamo is the harness's
            raise ContractFailure(self.deployment.plan.topology.name, reclassify(refused))

    def settle(self, name: str, loaded: bool) -> None:
        """Wait until every worker has (or no longer has) its card for `name`, then check
        each card against the worker's role."""
        deployment = self.deployment
        ns = deployment.plan.namespace

        def mine(state: DiscoveryState, worker: Worker) -> list[ModelCard]:
            ids = {i.instance_id for i in deployment.records(state, worker).generates}
            return [c for c in lora_cards(state, ns, name) if c.instance_id in ids]

        def settled(state: DiscoveryState) -> bool:
            return all(bool(mine(state, w)) == loaded for w in self._workers())

        deployment.observer.wait_for(settled, Deadline(deployment.session.settings.list_deadline))
        state = deployment.discovery_now()
        if loaded:  # each LoRA card against its base card's runtime data, for the verdict
            deployment.self_description.note_loras(deployment.roster(), state)
        violations = [
            v for w in self._workers() for v in lora_violations(w, mine(state, w), name, loaded)
        ]
        if violations:
            answers = "\n".join(f"    {a.describe()}" for a in self.answers)
            first = violations[0]
            violations[0] = Violation(
                first.kind, first.role, f"{first.message}\nthe workers' LoRA answers:\n{answers}"
            )
            raise ContractFailure(deployment.plan.topology.name, violations)

    def _adapter(self) -> Path:
        """The topology's LoRA asset: the catalogue's adapter from the cache on the GPU tier
        (fetched like the models), a generated one of the tiny text model's shapes on the
        CPU tier."""
        deployment = self.deployment
        ref = deployment.session.models(deployment.plan.topology.name, "lora")
        located = locate(ref)
        if located is None:
            raise FileNotFoundError(f"LoRA adapter {ref} is not available locally")
        return located


def runtime_cycle(deployment: Deployment, name: str = LORA_NAME) -> None:
    """A LoRA topology's runtime registration, judged in its one verdict: load on every
    registering worker (accepted, one card per worker of its role, listed), serve the
    adapter, unload (accepted, cards and listing gone, discovery as before the load), then
    the base model served again. Answers go to the deployment's verdict (a 404/5xx for the
    adapter or the base fails it); a broken step raises ContractFailure naming the worker."""
    lora = LoraControl(deployment)
    before = _fingerprint(deployment)
    lora.load(name)
    lora.check_answers()
    lora.settle(name, loaded=True)
    _await_listing(deployment, name, listed=True)
    deployment.events.note(LORA_LISTED)
    deployment.send("chat", model=name, purpose=LORA_CYCLE)
    lora.unload(name)
    lora.check_answers()
    lora.settle(name, loaded=False)
    _await_listing(deployment, name, listed=False)
    changed = differences(before, _fingerprint(deployment))
    if changed:
        raise ContractFailure(
            deployment.plan.topology.name,
            [
                Violation(
                    LORA_LEFT_BEHIND,
                    None,
                    f"discovery is not as it was before LoRA '{name}' was loaded, after its "
                    "unload was accepted:\n" + "\n".join(f"    {c}" for c in changed[:10]),
                )
            ],
        )
    deployment.send("chat", purpose=LORA_CYCLE)


def _worker_side(worker: Worker, answer: LoraAnswer) -> str:
    """What the worker logged while it answered: its errors and traceback, and its log."""
    lines = without_colours(worker.proc.log_text()).splitlines()
    errors = errors_in_window(lines, answer.sent_at, answer.answered_at + WORKER_MARGIN_S)
    title = f"{named(worker)}: its errors while answering {answer.action}"
    return f"{block(title, errors)}\n  full log: {worker.proc.log_path}"


def _fingerprint(deployment: Deployment) -> object:
    return discovery_fingerprint(
        deployment.discovery_now(), deployment.plan.namespace, deployment.plan.model_name
    )


def _await_listing(deployment: Deployment, name: str, listed: bool) -> None:
    """Wait (the listing deadline) until GET /v1/models lists `name` or no longer does."""
    deadline = Deadline(deployment.session.settings.list_deadline)
    while (name in deployment.listed_models()) != listed:
        if deadline.expired:
            what = "never listed after its cards came" if listed else "still listed after unload"
            raise ContractFailure(
                deployment.plan.topology.name,
                [
                    Violation(
                        LORA_LEFT_BEHIND,
                        None,
                        f"LoRA '{name}' {what} ({deadline.seconds:.0f} s; its cards: "
                        f"{_card_keys(deployment, name)})",
                    )
                ],
            )
        time.sleep(deadline.slice(_POLL_S))  # the listing is HTTP-only: polled to a deadline


def _card_keys(deployment: Deployment, name: str) -> str:
    cards = lora_cards(deployment.discovery_now(), deployment.plan.namespace, name)
    return ", ".join(c.key for c in cards) or "none"
