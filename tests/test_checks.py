"""Each contract check fires on the fault it exists for, and stays quiet on a clean state."""

from __future__ import annotations

import dataclasses
import time

from discovery_harness.judge import checks, incompatible
from discovery_harness.model.contract import CHAT_COMPLETIONS, EMPTY, ExpectedCard
from discovery_harness.model.violations import (
    BAD_RESPONSE,
    CARD_WITHOUT_INSTANCE,
    INCOMPATIBLE_WORKERS,
    INTERNAL_ADVERTISED,
    NON_LOOPBACK,
    STATUS_503,
    WRONG_CARD,
)
from discovery_harness.serving.http_client import Exchange
from tests.fakes import NS, FakeWorker, card_entry, instance_entry, state

AGG = ExpectedCard(model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="aggregated")
INTERNAL = ExpectedCard(
    model_type=EMPTY,
    model_input="Tokens",
    worker_type="aggregated",
    needs=(("encode",),),
    public=False,
)


def _card(**fields: object):
    return checks.records_for(
        state(instance_entry("backend", 7, 25012), card_entry("backend", 7, **fields)),
        NS,
        FakeWorker("worker", "backend", AGG),
    ).card


def test_worker_records_are_found_by_tcp_port_and_instance_id():
    s = state(
        instance_entry("backend", 7, 25012),
        card_entry("backend", 7),
        instance_entry("backend", 8, 25099),
        card_entry("backend", 8),
    )
    records = checks.records_for(s, NS, FakeWorker("worker", "backend", AGG))
    assert records.registered and records.card.instance_id == 7


def test_instance_without_card_is_not_registered():
    s = state(instance_entry("backend", 7, 25012))
    records = checks.records_for(s, NS, FakeWorker("worker", "backend", AGG))
    assert records.generate is not None and records.card is None and not records.registered


def test_matching_card_has_no_violation():
    worker = FakeWorker("worker", "backend", AGG)
    assert checks.compare_card(worker, _card(), "model-x") == []


def test_each_wrong_field_is_named():
    worker = FakeWorker("worker", "backend", AGG)
    card = _card(worker_type="decode", model_input="Text", needs=[["prefill"]])
    found = checks.compare_card(worker, card, "model-y")
    messages = "\n".join(v.message for v in found)
    assert {v.kind for v in found} == {WRONG_CARD}
    for expected in (
        "worker_type 'decode', expected 'aggregated'",
        "model_input 'Text', expected 'Tokens'",
        "needs 'prefill', expected '-'",
        "model name 'model-x', expected 'model-y'",
    ):
        assert expected in messages
    assert "worker 'worker' (pid 4242, start path init_decode)" in messages


def test_internal_worker_with_a_public_type_is_advertised():
    worker = FakeWorker("mm-worker", "backend", INTERNAL)
    card = _card(model_type="Chat | Completions", needs=[["encode"]])
    (violation,) = checks.compare_card(worker, card, "model-x")
    assert violation.kind == INTERNAL_ADVERTISED and violation.role == "mm-worker"


def test_empty_model_type_reads_as_empty():
    worker = FakeWorker("mm-worker", "backend", INTERNAL)
    assert checks.compare_card(worker, _card(model_type="", needs=[["encode"]]), "model-x") == []


def test_needs_compare_as_sets_of_groups():
    expected = ExpectedCard(
        model_type=CHAT_COMPLETIONS,
        model_input="Tokens",
        worker_type="encode",
        needs=(("prefill", "decode"), ("aggregated",)),
    )
    worker = FakeWorker("enc", "backend", expected)
    card = _card(worker_type="encode", needs=[["aggregated"], ["decode", "prefill"]])
    assert checks.compare_card(worker, card, "model-x") == []


def test_card_without_instance():
    s = state(
        instance_entry("backend", 7, 25012), card_entry("backend", 7), card_entry("backend", 9)
    )
    (violation,) = checks.cards_without_instances(s, NS)
    assert violation.kind == CARD_WITHOUT_INSTANCE and f"/{9:x}" in violation.message


def test_loopback_only_addresses_pass_and_others_fail():
    assert checks.non_loopback_addresses(state(instance_entry("backend", 7, 1)), NS) == []
    found = checks.non_loopback_addresses(
        state(instance_entry("backend", 7, 1, host="10.1.2.3")), NS
    )
    assert [v.kind for v in found] == [NON_LOOPBACK] and "10.1.2.3" in found[0].message


def test_incompatible_workers_line_in_the_frontend_log():
    log = "INFO something\nWARN Rejected incompatible workers model=model-x checksum=abc\n"
    (violation,) = incompatible.incompatible_workers(log, "model-x")
    assert violation.kind == INCOMPATIBLE_WORKERS and "checksum=abc" in violation.message
    assert incompatible.incompatible_workers("INFO all good\n", "model-x") == []


def test_another_models_rejection_is_not_this_models():
    log = "ERROR Rejected incompatible workers; the first accepted config model=model-y x=1\n"
    assert incompatible.incompatible_workers(log, "model-x") == []
    unnamed = "ERROR Rejected incompatible workers (an older frontend names no model)\n"
    assert len(incompatible.incompatible_workers(unnamed, "model-x")) == 1


def _exchange(status: int, after_ready: bool) -> Exchange:
    return Exchange(time.time(), "POST", "/v1/chat/completions", status, "body", after_ready)


def test_503_counts_only_after_readiness():
    assert checks.bad_exchanges([_exchange(503, False), _exchange(200, True)]) == []
    (violation,) = checks.bad_exchanges([_exchange(503, True)])
    assert violation.kind == STATUS_503
    assert "POST /v1/chat/completions -> 503" in violation.message


def test_404_and_5xx_for_a_listed_model():
    found = checks.bad_exchanges([_exchange(404, True), _exchange(500, True)])
    assert [v.kind for v in found] == [BAD_RESPONSE] and "-> 404" in found[0].message


def test_a_400_or_422_after_readiness_fails_the_verdict():
    found = checks.bad_exchanges([_exchange(400, True), _exchange(422, True)])
    assert [v.kind for v in found] == [BAD_RESPONSE]
    assert "-> 400" in found[0].message and "-> 422" in found[0].message
    assert checks.bad_exchanges([_exchange(400, False)]) == []  # a probe before readiness


def test_errors_of_one_request_shape_are_one_violation_with_that_shape():
    """So a release can declare the one shape it refuses (1.1-1.3's `image[size]` 400)."""
    size, default, probe = (
        dataclasses.replace(_exchange(400, True), request_id=rid) for rid in ("a", "b", "c")
    )
    labels = {"a": "image[size]", "b": "image[default]"}
    found = checks.bad_exchanges([size, default, probe], labels)
    assert [(v.kind, v.shape) for v in found] == [
        (BAD_RESPONSE, "image[size]"),
        (BAD_RESPONSE, "image[default]"),
        (BAD_RESPONSE, None),
    ]
    assert "for a listed model (image[size]):" in found[0].message
    assert found[0].at == (size.wall_time,)


def test_servable_follows_the_declared_needs():
    encoder = ExpectedCard(
        model_type=CHAT_COMPLETIONS,
        model_input="Tokens",
        worker_type="encode",
        needs=(("prefill", "decode"), ("aggregated",)),
    )
    prefill = ExpectedCard(
        model_type="Prefill",
        model_input="Tokens",
        worker_type="prefill",
        needs=(("decode",),),
        public=False,
    )
    decode_internal = ExpectedCard(
        model_type=EMPTY,
        model_input="Tokens",
        worker_type="decode",
        needs=(("prefill",),),
        public=False,
    )
    assert checks.servable([AGG])
    assert checks.servable([AGG, AGG])
    assert not checks.servable([prefill, decode_internal])  # no public worker yet
    assert not checks.servable([encoder])  # needs unmet
    assert checks.servable([encoder, prefill, decode_internal])
    assert checks.servable([encoder, INTERNAL])


def _context_problems(context_source: str, wanted: int, **card: object):
    worker = FakeWorker("worker", "backend", AGG)
    records = checks.records_for(
        state(instance_entry("backend", 7, 25012), card_entry("backend", 7, **card)), NS, worker
    )
    judged = type("Judged", (), {"role": "worker", "pid": 4242, "start_paths": ("init_decode",)})
    view = judged()
    view.context_length, view.context_source = wanted, context_source  # type: ignore[attr-defined]
    return checks.context_lengths(records, view)  # type: ignore[arg-type]


def test_a_card_context_length_is_the_models_and_a_wrong_one_is_named():
    assert (
        _context_problems("config.json max_position_embeddings 4096", 4096, context_length=4096)
        == []
    )
    wrong = _context_problems("--context-length 2048", 2048, context_length=4096)
    assert [v.kind for v in wrong] == [WRONG_CARD]
    assert (
        "context_length 4096, expected 2048 (the model's: --context-length 2048)"
        in wrong[0].message
    )


def test_a_1_3_card_is_judged_by_its_architectural_maximum():
    config = "config.json max_position_embeddings 4096"
    assert _context_problems(config, 4096, architectural_max_context_length=4096) == []
    wrong = _context_problems(config, 4096, architectural_max_context_length=8192)
    assert "architectural_max_context_length 8192, expected 4096" in wrong[0].message
    # The flag's length is not on a 1.3 card: nothing to compare it with.
    assert (
        _context_problems("--context-length 2048", 2048, architectural_max_context_length=4096)
        == []
    )
    # A card with neither field is still a wrong card.
    assert "context_length None" in _context_problems(config, 4096)[0].message
