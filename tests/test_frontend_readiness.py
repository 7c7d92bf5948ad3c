"""The frontend-readiness judge on answers recorded from Dynamo 1.6.1's frontend (`up
disaggregated`, `up mm-encode-pd`, `up aggregated`, a worker stopped with SIGTERM, a card
rewritten in place) and on etcd values of the same shape: agreement is silent, each kind of
disagreement is a violation naming the role, the keys and the frontend's JSON."""

from __future__ import annotations

import json

import pytest

from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge.frontend_readiness import (
    etcd_instances,
    health_disagreements,
    health_instances,
    parse_ready,
    readiness_disagreements,
    readiness_from_etcd,
)
from discovery_harness.model.violations import FRONTEND_HEALTH_STALE, FRONTEND_READINESS_DISAGREES

pytestmark = pytest.mark.unit

NS = "h-disaggregated-c5d735"
MODEL = "disaggregated-c5d735"
DECODE_ID, PREFILL_ID = 0x6D82A2479935410C, 0x6D82A2479935410A
ROLES = {"decode": ["decode"], "prefill": ["prefill"]}

# Recorded: both workers up.
READY_BOTH = (
    '{"model":"disaggregated-c5d735","ready":true,"namespaces":{"h-disaggregated-c5d735":'
    '{"ready":true,"worker_types":{"decode":{"workers":1,"needs":[["prefill"]]},"prefill":'
    '{"workers":1,"needs":[["decode"]]}},"present":["decode","prefill"],'
    '"missing_worker_types":[]}}}'
)
# Recorded: prefill SIGTERMed, its generate instance gone, its card still there (5 s grace).
READY_PREFILL_DYING = (
    '{"model":"disaggregated-c5d735","ready":false,"reason":"no namespace has all required '
    'worker types live","namespaces":{"h-disaggregated-c5d735":{"ready":false,"reason":'
    '"missing worker types: prefill","worker_types":{"decode":{"workers":1,"needs":'
    '[["prefill"]]},"prefill":{"workers":0,"needs":[["decode"]]}},"present":["decode"],'
    '"missing_worker_types":["prefill"]}}}'
)
# Recorded: the prefill card gone too.
READY_PREFILL_GONE = (
    '{"model":"disaggregated-c5d735","ready":false,"reason":"no namespace has all required '
    'worker types live","namespaces":{"h-disaggregated-c5d735":{"ready":false,"reason":'
    '"missing worker types: prefill","worker_types":{"decode":{"workers":1,"needs":'
    '[["prefill"]]}},"present":["decode"],"missing_worker_types":["prefill"]}}}'
)
NOT_FOUND = '{"message":"Model not found","type":"Not Found","code":404}'


def _instance(component: str, endpoint: str, ident: int) -> tuple[str, bytes]:
    key = f"v1/instances/{NS}/{component}/{endpoint}/{ident:x}"
    value = {
        "type": "Endpoint",
        "component": component,
        "endpoint": endpoint,
        "namespace": NS,
        "instance_id": ident,
        "transport": {"tcp": f"127.0.0.1:30009/{ident:x}/{NS}/{component}/{endpoint}"},
    }
    return key, json.dumps(value).encode()


def _card(
    component: str, ident: int, worker_type: str, needs: list[list[str]]
) -> tuple[str, bytes]:
    key = f"v1/mdc/{NS}/{component}/generate/{ident:x}"
    card = {"display_name": MODEL, "model_type": "Chat | Completions", "model_input": "Tokens"}
    card |= {"worker_type": worker_type, "needs": needs}
    return key, json.dumps({"instance_id": ident, "card_json": card}).encode()


def _state(*entries: tuple[str, bytes]) -> DiscoveryState:
    return DiscoveryState(dict(entries))


DECODE = (
    _instance("backend", "generate", DECODE_ID),
    _card("backend", DECODE_ID, "decode", [["prefill"]]),
)
PREFILL_CARD = _card("prefill", PREFILL_ID, "prefill", [["decode"]])
PREFILL_GENERATE = _instance("prefill", "generate", PREFILL_ID)


def _judge(state: DiscoveryState, status: int, body: str) -> list:
    etcd = readiness_from_etcd(state, NS, MODEL)
    return readiness_disagreements(etcd, parse_ready(status, body, NS), ROLES, "after readiness")


def test_both_up_and_ready_agree():
    state = _state(*DECODE, PREFILL_CARD, PREFILL_GENERATE)
    assert readiness_from_etcd(state, NS, MODEL).ready
    assert _judge(state, 200, READY_BOTH) == []


def test_a_stopped_prefill_is_missing_on_both_sides_card_or_no_card():
    dying = _state(*DECODE, PREFILL_CARD)
    etcd = readiness_from_etcd(dying, NS, MODEL)
    assert not etcd.ready and etcd.missing == {"prefill"}
    assert _judge(dying, 503, READY_PREFILL_DYING) == []
    gone = _state(*DECODE)
    assert readiness_from_etcd(gone, NS, MODEL).missing == {"prefill"}
    assert _judge(gone, 503, READY_PREFILL_GONE) == []


def test_ready_while_a_needed_role_is_missing_names_the_role_keys_and_answer():
    (found,) = _judge(_state(*DECODE, PREFILL_CARD), 200, READY_BOTH)
    assert found.kind == FRONTEND_READINESS_DISAGREES and found.role == "prefill"
    assert "says ready while etcd lacks prefill" in found.message
    assert "missing in etcd: prefill ('prefill') needed by 'decode'" in found.message
    assert f"GET /v1/models/{MODEL}/ready -> 200" in found.message
    assert f"v1/mdc/{NS}/prefill/generate/{PREFILL_ID:x}" in found.message
    assert f"v1/instances/{NS}/backend/generate/{DECODE_ID:x}" in found.message
    assert '"missing_worker_types":[]' in found.message


def test_not_ready_while_every_need_is_met_is_a_disagreement():
    (found,) = _judge(_state(*DECODE, PREFILL_CARD, PREFILL_GENERATE), 503, READY_PREFILL_DYING)
    assert "says not ready" in found.message and "etcd meets every need" in found.message


def test_a_frontend_that_does_not_know_a_ready_namespace_disagrees():
    (found,) = _judge(_state(*DECODE, PREFILL_CARD, PREFILL_GENERATE), 404, NOT_FOUND)
    assert "-> 404" in found.message


def test_missing_worker_types_must_name_the_missing_role():
    unnamed = READY_PREFILL_GONE.replace(
        '"missing_worker_types":["prefill"]', '"missing_worker_types":[]'
    )
    (found,) = _judge(_state(*DECODE), 503, unnamed)
    assert "does not name prefill in missing_worker_types" in found.message
    assert found.role == "prefill"


def test_no_card_and_an_unknown_model_agree():
    assert _judge(_state(), 404, NOT_FOUND) == []
    assert not readiness_from_etcd(_state(), NS, MODEL).registered


def test_a_card_rewritten_in_place_that_the_frontend_ignored():
    """Recorded on 1.6.1: an aggregated card's needs rewritten to [["prefill"]] in etcd (same
    key and lease); the frontend kept answering ready with the old needs."""
    ident = 0x2649A2479C375B0A
    state = _state(
        _instance("backend", "generate", ident),
        _card("backend", ident, "aggregated", [["prefill"]]),
    )
    body = (
        (
            '{"model":"%s","ready":true,"namespaces":{"%s":{"ready":true,"worker_types":'
            '{"aggregated":{"workers":1,"needs":[]}},"present":["aggregated"],'
            '"missing_worker_types":[]}}}'
        )
        .replace("%s", MODEL, 1)
        .replace("%s", NS, 1)
    )
    etcd = readiness_from_etcd(state, NS, MODEL)
    (found,) = readiness_disagreements(
        etcd, parse_ready(200, body, NS), {"aggregated": ["worker"]}, "after the rewrite"
    )
    assert "says ready while etcd lacks prefill" in found.message
    assert found.role == "worker" and "prefill needed by 'worker'" in found.message
    assert "aggregated 1 live (needs prefill)" in found.message
    assert '"needs":[]' in found.message


def test_alternatives_unmet_need_only_not_ready():
    """mm-encode-pd's encoder alone: its needs (prefill+decode or aggregated) unmet; which of
    them the frontend names is its choice, so only 'not ready' is required."""
    ident = 0x13B4A2479A8F690B
    state = _state(
        _instance("encode", "generate", ident),
        _card("encode", ident, "encode", [["prefill", "decode"], ["aggregated"]]),
    )
    etcd = readiness_from_etcd(state, NS, MODEL)
    assert not etcd.ready and etcd.unmet == ("prefill+decode or aggregated",) and not etcd.missing
    body = (
        '{"model":"m","ready":false,"namespaces":{"%s":{"ready":false,"worker_types":{"encode":'
        '{"workers":1,"needs":[["prefill","decode"],["aggregated"]]}},"present":["encode"],'
        '"missing_worker_types":["aggregated"]}}}'
    ).replace("%s", NS)
    assert readiness_disagreements(etcd, parse_ready(503, body, NS), {}, "start") == []


# Recorded GET /health of `up aggregated` (instances of the namespace and one of another).
HEALTH = {
    "status": "healthy",
    "endpoints": [f"dyn://{NS}.backend.generate"],
    "instances": [
        {
            "component": "backend",
            "endpoint": "generate",
            "namespace": NS,
            "instance_id": DECODE_ID,
            "transport": {"tcp": "127.0.0.1:30009/x"},
        },
        {
            "component": "backend",
            "endpoint": "clear_kv_blocks",
            "namespace": NS,
            "instance_id": DECODE_ID,
            "transport": {"tcp": "127.0.0.1:30009/y"},
        },
        {
            "component": "backend",
            "endpoint": "generate",
            "namespace": "other",
            "instance_id": 7,
            "transport": {"tcp": "127.0.0.1:1/z"},
        },
    ],
}


def test_health_instances_equal_to_etcd_agree():
    state = _state(
        _instance("backend", "generate", DECODE_ID),
        _instance("backend", "clear_kv_blocks", DECODE_ID),
    )
    assert health_instances(HEALTH, NS) == set(etcd_instances(state, NS))
    assert (
        health_disagreements(etcd_instances(state, NS), health_instances(HEALTH, NS), NS, "now")
        == []
    )


def test_health_listing_a_gone_instance_and_lacking_a_new_one_is_stale():
    state = _state(
        _instance("backend", "generate", DECODE_ID), _instance("prefill", "generate", PREFILL_ID)
    )
    (found,) = health_disagreements(
        etcd_instances(state, NS), health_instances(HEALTH, NS), NS, "after readiness"
    )
    assert found.kind == FRONTEND_HEALTH_STALE
    assert (
        f"lacks v1/instances/{NS}/prefill/generate/{PREFILL_ID:x} that etcd holds" in found.message
    )
    assert f"lists backend/clear_kv_blocks/{DECODE_ID:x} that etcd does not hold" in found.message
