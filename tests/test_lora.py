"""LoRA cards are judged against their worker's role, present after a load, gone after an
unload (hand-made discovery state)."""

from __future__ import annotations

import json

from discovery_harness.deployment.lora import lora_cards, lora_violations
from discovery_harness.model.contract import ExpectedCard
from discovery_harness.model.violations import (
    INTERNAL_ADVERTISED,
    NEVER_REGISTERED,
    REGISTERED_UNEXPECTEDLY,
    WRONG_CARD,
)
from tests.fakes import NS, FakeWorker, card_entry, instance_entry, state

PREFILL = ExpectedCard(
    model_type="Prefill",
    model_input="Tokens",
    worker_type="prefill",
    needs=(("decode",),),
    public=False,
)


def _lora_card(instance_id: int, **card: object) -> tuple[str, bytes]:
    key, value = card_entry("prefill", instance_id, **card)
    body = json.loads(value)
    body["card_json"]["display_name"] = "my-lora"
    return f"{key}/my-lora", json.dumps(body).encode()


def _prefill_lora_state(**card: object):
    defaults = {"model_type": "Prefill", "worker_type": "prefill", "needs": [["decode"]]}
    return state(
        instance_entry("prefill", 7, 25012),
        card_entry("prefill", 7, **defaults),
        _lora_card(7, **{**defaults, **card}),
    )


def test_a_lora_card_of_the_workers_role_passes():
    cards = lora_cards(_prefill_lora_state(), NS, "my-lora")
    assert [c.lora_name for c in cards] == ["my-lora"]
    assert lora_violations(FakeWorker("prefill", "prefill", PREFILL), cards, "my-lora", True) == []


def test_a_prefill_lora_registered_as_chat_is_a_wrong_card():
    observed = _prefill_lora_state(
        model_type="Chat | Completions", worker_type="aggregated", needs=[]
    )
    cards = lora_cards(observed, NS, "my-lora")
    found = lora_violations(FakeWorker("prefill", "prefill", PREFILL), cards, "my-lora", True)
    # The surface an internal worker must not have, and the role it must keep.
    assert {v.kind for v in found} == {INTERNAL_ADVERTISED, WRONG_CARD}
    assert any("is internal but registered model type" in v.message for v in found)
    assert any("worker_type 'aggregated', expected 'prefill'" in v.message for v in found)


def test_missing_after_load_and_left_after_unload_are_named():
    worker = FakeWorker("prefill", "prefill", PREFILL)
    (missing,) = lora_violations(worker, [], "my-lora", loaded=True)
    assert missing.kind == NEVER_REGISTERED and "my-lora" in missing.message
    cards = lora_cards(_prefill_lora_state(), NS, "my-lora")
    (stale,) = lora_violations(worker, cards, "my-lora", loaded=False)
    assert stale.kind == REGISTERED_UNEXPECTEDLY and cards[0].key in stale.message
