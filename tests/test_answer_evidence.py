"""A failed answer's cause from the logs: the frontend's lines for its request id, its routing
changes just before, the worker it routed to (by instance id) and that worker's traceback."""

from __future__ import annotations

import pytest

from discovery_harness.judge.answer_evidence import ServingWorker, explain, render_all
from discovery_harness.judge.canary import line_time
from discovery_harness.serving.http_client import Exchange

pytestmark = pytest.mark.unit

T = "2026-12-06T16:53:57."
RID = "harness-0123456789abcdef0123"
FRONTEND = [
    f"{T}489210Z  INFO dynamo_llm::kv_router::prefill_router::activation: Prefill router "
    "deactivated (all prefill workers removed) model_name=lora-p-d-99 namespace=h-lora-p-d-99",
    f"{T}510000Z  INFO http-request: dynamo_llm::http::service::metrics: request received "
    'x_request_id="harness-other"',
    f"{T}521515Z  INFO http-request: dynamo_runtime::pipeline::network::egress::push_router: "
    f'Selected worker router_mode="round-robin" worker_id=77 x_request_id="{RID}"',
    f"{T}523263Z ERROR http-request: dynamo_llm::http::service::openai: Internal server error: "
    f'RuntimeError: bootstrap_info is required status=500 x_request_id="{RID}"',
    f"{T}523495Z ERROR http-request: tower_http::trace::on_failure: response failed "
    f'classification=Status code: 500 x_request_id="{RID}"',
]
DECODE_LOG = (
    f"{T}400000Z ERROR handler_base.generate: an earlier request's error",
    f"{T}521710Z  INFO handle_payload: dynamo_runtime::pipeline::network::ingress::"
    "push_handler: request received",
    "Traceback (most recent call last):",
    '  File "decode_handler.py", line 383, in generate',
    "    raise RuntimeError(",
    "RuntimeError: bootstrap_info is required for disaggregated decode but was not provided",
    f"{T}600000Z  INFO handle_payload: request completed",
)


def _exchange() -> Exchange:
    sent = line_time(FRONTEND[2])
    assert sent is not None
    body = '{"message":"Internal server error"}'
    return Exchange(sent + 0.002, "POST", "/v1/chat/completions", 500, body, True, RID, sent)


def _workers() -> list[ServingWorker]:
    return [
        ServingWorker("prefill", 11, frozenset({76}), ()),
        ServingWorker("decode", 12, frozenset({77}), DECODE_LOG),
    ]


def test_the_frontend_error_the_serving_worker_and_its_traceback_are_found():
    found = explain(_exchange(), FRONTEND, _workers())
    assert found.served_by is not None and found.served_by.role == "decode"
    assert any("Selected worker" in line for line in found.frontend_lines)
    assert any("Internal server error: RuntimeError" in line for line in found.frontend_lines)
    assert not any("tower_http" in line for line in found.frontend_lines)
    assert not any("harness-other" in line for line in found.frontend_lines)
    assert found.worker_lines[0] == "Traceback (most recent call last):"
    assert found.worker_lines[-1].startswith("RuntimeError: bootstrap_info is required")
    assert not any("an earlier request's error" in line for line in found.worker_lines)


def test_the_frontends_routing_change_just_before_is_shown_as_the_likely_cause():
    found = explain(_exchange(), FRONTEND, _workers())
    assert len(found.state_changes) == 1 and "Prefill router deactivated" in found.state_changes[0]
    text = render_all([_exchange()], FRONTEND, _workers())
    assert "the frontend's routing changes just before" in text
    assert "served by worker 'decode' (pid 12)" in text
    assert f"(x-request-id {RID})" in text


def test_an_answer_no_worker_served_says_so():
    unrouted = [line for line in FRONTEND if "Selected worker" not in line]
    text = render_all([_exchange()], unrouted, _workers())
    assert "served by: no worker named in the frontend's log for this request" in text
    # 0.7.1's frontend logs no routing line: every worker with errors in the window is shown.
    assert "worker 'decode' (pid 12) logged errors near the request" in text
    assert "worker 'prefill'" not in text  # nothing in its log then


def test_a_worker_log_without_stamps_near_the_request_shows_its_last_traceback():
    """0.7.1's worker logs no line per request: its last traceback after its last stamp."""
    unstamped = (
        f"{T}000000Z  INFO main.worker: serving",
        "Traceback (most recent call last):",
        '  File "faults.py", line 261, in generate',
        "RuntimeError: an older one",
        "",
        "Traceback (most recent call last):",
        '  File "faults.py", line 261, in generate',
        "RuntimeError: injected fault on a real request",
        "HARNESS-FAULT request-error: DecodeWorkerHandler.generate raises",
    )
    workers = [ServingWorker("worker", 9, frozenset({5}), unstamped)]
    unrouted = [line for line in FRONTEND if "Selected worker" not in line]
    found = explain(_exchange(), unrouted, workers)
    ((worker, lines),) = found.suspects
    assert worker.role == "worker" and lines[-1] == "RuntimeError: injected fault on a real request"


def test_a_200_judged_wrong_shows_every_line_the_serving_worker_wrote_then():
    """No error to show for a wrong 200: the worker's lines in the window (what it printed
    too) are its side, and the title says they are lines, not errors."""
    sent = line_time(FRONTEND[2])
    assert sent is not None
    answer = Exchange(sent + 0.002, "POST", "/v1/embeddings", 200, "{}", True, RID, sent)
    log = (
        f"{T}100000Z  INFO main: serving",
        f"{T}521710Z  INFO handle_payload: request received",
        "HARNESS-FAULT bad-answer-embedding-order: embeddings reversed",
        f"{T}700000Z  INFO handle_payload: a later request",
    )
    workers = [ServingWorker("embedding", 7, frozenset({77}), log)]
    found = explain(answer, FRONTEND, workers)
    assert found.worker_lines == log[1:3]
    text = found.render()
    assert "served by worker 'embedding' (pid 7): its lines in the request's window" in text
