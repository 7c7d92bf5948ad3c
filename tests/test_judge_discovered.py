"""The audit's judge on hand-made discovery state: roles recognised from cards, each
violation it claims caught with the tests' kinds, nothing on a clean state."""

from __future__ import annotations

import json

import pytest

from discovery_harness.judge.discovered import FrontendView, judge_discovery, pending
from discovery_harness.judge.modes import FoundWorker, recognise
from discovery_harness.model.records import parse_card, parse_instance
from discovery_harness.model.violations import (
    CARD_WITHOUT_INSTANCE,
    FRONTEND_READINESS_DISAGREES,
    INTERNAL_ADVERTISED,
    LISTED_EARLY,
    NEEDS_UNMET,
    NEVER_LISTED,
    NEVER_REGISTERED,
)
from discovery_harness_scenarios.catalogue import CATALOGUE
from tests.fakes import NS, card_entry, instance_entry, state

pytestmark = pytest.mark.unit

ENCODER = {"worker_type": "encode", "needs": [["prefill", "decode"], ["aggregated"]]}
MM_WORKER = {"model_type": "", "worker_type": "aggregated", "needs": [["encode"]]}


NO_FRONTEND = FrontendView()


def _judge(s, now=100.0, grace=5.0, frontend=NO_FRONTEND):
    seen = dict.fromkeys(s.raw, 0.0)
    return judge_discovery(s, seen, now, grace, CATALOGUE, frontend)


def _mm_encode_pd(with_worker_card: bool = True, **worker_card: object):
    entries = [
        instance_entry("encode", 1, 25001),
        card_entry("encode", 1, **ENCODER),
        instance_entry("backend", 2, 25002),
    ]
    if with_worker_card:
        entries.append(card_entry("backend", 2, **{**MM_WORKER, **worker_card}))
    return state(*entries)


def test_a_clean_mm_encode_pd_is_recognised_and_conformant():
    (deployment,) = _judge(_mm_encode_pd())
    assert deployment.topology == "mm-encode-pd"
    assert {w.role for w in deployment.workers} == {"mm-encoder", "mm-worker"}
    assert deployment.verdict.conformant, deployment.verdict.violations


def test_an_instance_without_its_card_past_the_grace_is_never_registered_by_role():
    (deployment,) = _judge(_mm_encode_pd(with_worker_card=False))
    (found,) = deployment.verdict.violations  # the encoder's need is the same finding
    assert found.kind == NEVER_REGISTERED and found.role == "mm-worker"
    assert "component 'backend'" in found.message
    assert "instance 2 at 127.0.0.1:25002" in found.message


def test_within_the_grace_the_verdict_is_pending_and_nothing_is_reported():
    s = _mm_encode_pd(with_worker_card=False)
    assert pending(s, dict.fromkeys(s.raw, 98.0), 100.0, 5.0)
    (deployment,) = _judge(s, now=2.0)
    assert not [v for v in deployment.verdict.violations if v.kind == NEVER_REGISTERED]


def test_an_internal_worker_with_a_public_type_is_internal_advertised():
    (deployment,) = _judge(_mm_encode_pd(model_type="Chat | Completions"))
    assert [v.role for v in deployment.verdict.violations if v.kind == INTERNAL_ADVERTISED] == [
        "mm-worker"
    ]


def test_a_decode_card_without_a_prefill_peer_has_needs_not_met():
    s = state(
        instance_entry("backend", 3, 25003),
        card_entry("backend", 3, worker_type="decode", needs=[["prefill"]]),
    )
    (deployment,) = _judge(s)
    assert [v.role for v in deployment.verdict.violations if v.kind == NEEDS_UNMET] == ["decode"]


def test_a_card_whose_instance_is_gone_is_reported_once_the_grace_has_passed():
    s = state(card_entry("backend", 4))
    (deployment,) = _judge(s)
    assert [v.kind for v in deployment.verdict.violations] == [CARD_WITHOUT_INSTANCE]


def test_listing_checks_use_the_frontends_answers():
    clean = _mm_encode_pd()
    ready = json.dumps({"model": "model-x", "ready": True, "namespaces": {NS: {"ready": True}}})
    listed = FrontendView(frozenset({"model-x"}), {"model-x": (200, ready)})
    (deployment,) = _judge(clean, frontend=listed)
    assert deployment.verdict.conformant, deployment.verdict.violations
    unlisted = FrontendView(frozenset(), {"model-x": (200, ready)})
    assert [v.kind for v in _judge(clean, frontend=unlisted)[0].verdict.violations] == [
        NEVER_LISTED
    ]
    not_ready = FrontendView(frozenset({"model-x"}), {"model-x": (503, "no engine")})
    early, disagrees = _judge(clean, frontend=not_ready)[0].verdict.violations
    assert early.kind == LISTED_EARLY and "-> 503 no engine" in early.message
    assert disagrees.kind == FRONTEND_READINESS_DISAGREES  # etcd: every need met


def test_a_card_less_worker_is_recognised_by_its_peers():
    s = _mm_encode_pd(with_worker_card=False)
    workers = [
        FoundWorker(parse_instance(k, v), None, 0.0) for k, v in s.raw.items() if "instances" in k
    ]
    cards = {parse_card(k, v).component: parse_card(k, v) for k, v in s.raw.items() if "mdc" in k}
    for worker in workers:
        worker.card = cards.get(worker.component)
    recognition = recognise(workers, CATALOGUE)
    assert recognition.topology.name == "mm-encode-pd"
    assert sorted(s.role for s in recognition.roles.values()) == ["mm-encoder", "mm-worker"]
    assert NS in next(iter(recognition.roles))
