"""The canary judged from a worker's log: counts, the handler's error, the stop boundary,
each mode's payload; and the payload table read against the installed Dynamo's source."""

from __future__ import annotations

import ast

import pytest

from discovery_harness.judge import canary
from discovery_harness.judge.canary import PAYLOADS, line_time, payload_for, read_canaries
from discovery_harness.judge.coverage import sglang_package_dir
from discovery_harness.model.contract import ExpectedCard
from discovery_harness.model.violations import CANARY_NEVER_RAN, CANARY_REJECTED
from tests.fakes import FakeWorker

pytestmark = pytest.mark.unit

EMBED = ExpectedCard(model_type="Embedding", model_input="Text", worker_type="aggregated")
T = "2026-12-05T19:11:4"
SENT = f"{T}5.895221Z DEBUG dynamo_runtime::health_check: Canary timer expired for generate, sending health check"  # noqa: E501
SENDING = f"{T}5.895262Z DEBUG dynamo_runtime::health_check: Sending health check to generate via local registry"  # noqa: E501
OK = f"{T}5.896283Z DEBUG dynamo_runtime::health_check: Health check successful for generate"
REJECTED = (
    f"{T}6.896184Z  WARN dynamo_runtime::health_check: Health check error response from "
    'generate: DynamoError { class: Backend(InvalidArgument), diagnostic: Some(Diagnostic { '
    'message: "ValidationError: 2 validation errors for EmbeddingRequest\\nmodel\\n  Field '
    'required [type=missing]", source: None }), public: None }'
)
CLOSED = (
    f"{T}9.100000Z  WARN dynamo_runtime::health_check: Health check error response from "
    'generate: DynamoError { message: "RuntimeError: Event loop is closed" }'
)
TIMEOUT = f"{T}7.000000Z  WARN dynamo_runtime::health_check: Health check timeout for generate"
EMBEDDING_PAYLOAD = PAYLOADS["SglangEmbeddingHealthCheckPayload"]


def _worker() -> FakeWorker:
    return FakeWorker("embedding", "backend", EMBED, pid=77, start_paths=("init_embedding",))


def test_a_canary_that_came_back_is_counted_once():
    log = read_canaries([SENT, SENDING, OK, "unrelated line", SENT, SENDING, OK])
    assert (log.sent, log.succeeded, log.failures, log.reached) == (2, 2, (), 2)
    assert len(log.lines) == 6


def test_a_rejected_canary_carries_the_handlers_error():
    log = read_canaries([SENT, SENDING, REJECTED])
    assert log.succeeded == 0 and len(log.failures) == 1
    assert log.failures[0].error.startswith("ValidationError: 2 validation errors for Embed")
    assert "\\n" not in log.failures[0].error and "  " not in log.failures[0].error
    assert read_canaries([TIMEOUT]).failures[0].error == "Health check timeout for generate"


def test_an_error_the_handler_logged_for_its_canary_is_a_rejection_though_answered():
    """1.6.1's video handler catches its exception and answers an error response: the
    runtime logs a success; the handler's own ERROR line between send and outcome says no."""
    error = (
        f"{T}5.895900Z ERROR video_generation_handler.generate: Error in video generation: "
        "2 validation errors for CreateVideoRequest"
    )
    lines = [SENT, SENDING, error, "prompt", "  Field required [type=missing]", "Traceback (mo"]
    log = read_canaries([*lines, "ValidationError: again", OK])
    assert log.succeeded == 0 and len(log.failures) == 1
    failure = log.failures[0]
    assert failure.swallowed and failure.error.startswith("Error in video generation: 2 valid")
    assert failure.error.endswith("CreateVideoRequest prompt Field required [type=missing]")
    (found,) = canary.judge(_worker(), EMBEDDING_PAYLOAD, log)
    assert "the runtime logged a success and the worker stays ready" in found.message
    assert read_canaries([error, SENT, OK]).succeeded == 1  # an error outside a canary


def test_a_handlers_error_in_sglangs_log_format_is_a_rejection_too():
    """Once sglang's Engine has started it owns the Python log format (its configure_logger
    replaces the root handlers): no level, no target; the error is known by its words."""
    error = "[2026-12-08 00:44:04] Error in multimodal generation: 1 validation error for Req"
    lines = [SENT, SENDING, error, "request", "  Field required [type=missing]", "Traceback (m"]
    log = read_canaries([*lines, OK])
    assert log.succeeded == 0 and len(log.failures) == 1
    assert log.failures[0].error == (
        "Error in multimodal generation: 1 validation error for Req request Field required "
        "[type=missing]"
    )
    info = "[2026-12-08 00:44:04] CpuScheduler for /models/x (no scheduler process)"
    assert read_canaries([SENT, SENDING, info, OK]).succeeded == 1


def test_a_real_requests_error_while_a_canary_is_in_flight_is_not_the_canarys():
    """Seen: a bad-input request to the video worker arrived while its canary was in flight;
    its error was logged before the canary's success and is that request's."""
    plane = "INFO handle_payload: dynamo_runtime::pipeline::network::ingress::push_handler:"
    received = f"{T}6.548405Z  {plane} request received request_id=c8708ded-b8b0 otel.kind=x"
    completed = f"{T}7.059653Z  {plane} request completed request_id=c8708ded-b8b0 otel.kind=x"
    error = (
        f"{T}7.050515Z ERROR video_generation_handler.generate: Error in video generation: "
        "Invalid size format 'big'"
    )
    log = read_canaries([SENT, SENDING, received, error, OK, completed])
    assert (log.succeeded, log.failures) == (1, ())
    rejected = read_canaries([SENT, SENDING, received, completed, error, OK])
    assert rejected.succeeded == 0 and len(rejected.failures) == 1  # nothing else running


def test_the_system_servers_503_access_line_inside_a_canary_is_not_the_handlers_error():
    """The gateway interleaving CI caught: the harness's own /health read answered 503 (the
    system server logs it at ERROR) between a canary's send and its success."""
    probe = (
        f"{T}5.895700Z ERROR tower_http::trace::on_failure: response failed "
        "classification=Status code: 503 Service Unavailable latency=0 ms"
    )
    log = read_canaries([SENT, SENDING, probe, OK])
    assert (log.succeeded, log.failures) == (1, ())
    assert probe not in log.lines


def test_the_request_planes_error_for_a_real_request_inside_a_canary_is_not_the_handlers():
    """A runtime line in a span ("handle_payload: dynamo_runtime::...") names a Rust target
    after the span: a real request's, over the request plane, not the canary's."""
    plane = (
        f"{T}5.895700Z ERROR handle_payload: dynamo_runtime::pipeline::network::ingress::"
        'push_handler: Failed to publish complete final for stream 4aaf otel.kind="server" '
        'request_id="4aaf" component="backend" endpoint="generate"'
    )
    assert read_canaries([SENT, plane, OK]).failures == ()


def test_another_endpoints_error_inside_a_canary_is_not_the_handlers_error():
    other = f"{T}5.895800Z ERROR handler_base.load_lora: Failed to load LoRA adapter: missing"
    assert read_canaries([SENT, other, OK]).failures == ()
    own = f"{T}5.895800Z ERROR embedding_handler.generate: bad request"
    assert read_canaries([SENT, own, OK]).failures[0].error == "bad request"


def test_canaries_of_two_processes_in_one_log_each_close_on_their_own_outcome():
    """A gateway's children log into one file: two canaries in flight at once."""
    log = read_canaries([SENT, SENT, OK, REJECTED])
    assert (log.sent, log.succeeded, len(log.failures)) == (2, 1, 1)
    late = f"{T}8.000000Z ERROR embedding_handler.generate: after every canary came back"
    assert read_canaries([SENT, SENT, OK, OK, late]).failures == ()


def test_other_endpoints_are_not_counted():
    other = OK.replace("for generate", "for clear_kv_blocks")
    assert read_canaries([other]).reached == 0


def test_what_is_logged_after_the_harness_signalled_the_stop_is_not_counted():
    until = line_time(OK)
    assert until is not None
    log = read_canaries([SENT, OK, CLOSED], until=until)
    assert (log.succeeded, log.failures) == (1, ())
    assert len(read_canaries([SENT, OK, CLOSED]).failures) == 1  # without the boundary


def test_a_rejection_names_role_pid_start_path_payload_and_error():
    log = read_canaries([SENT, REJECTED])
    (found,) = canary.judge(_worker(), EMBEDDING_PAYLOAD, log, "the log excerpt")
    assert found.kind == CANARY_REJECTED and found.role == "embedding"
    assert "worker 'embedding' (pid 77, start path init_embedding)" in found.message
    assert "SglangEmbeddingHealthCheckPayload (top-level keys model, input)" in found.message
    assert 'error:    "ValidationError: 2 validation errors' in found.message
    assert "Health check error response from generate" in found.evidence
    assert found.evidence.endswith("the log excerpt")


def test_no_canary_is_a_violation_only_where_it_was_waited_for():
    none = read_canaries([SENT])
    assert canary.judge(_worker(), EMBEDDING_PAYLOAD, none) == []
    (found,) = canary.judge(_worker(), EMBEDDING_PAYLOAD, none, waited="6.0 s for one")
    assert found.kind == CANARY_NEVER_RAN
    assert "1 canary timer(s) expired, 0 came back" in found.message
    assert "waited:   6.0 s for one" in found.message
    assert canary.judge(_worker(), None, none, waited="6.0 s") == []  # no payload, no canary


@pytest.mark.parametrize(
    ("start_paths", "flags", "expected"),
    [
        (("init_decode",), (), "SglangHealthCheckPayload"),
        (("init_decode",), ("--disaggregation-mode", "decode"), "SglangDisaggHealthCheckPayload"),
        (("init_prefill",), (), "SglangPrefillHealthCheckPayload"),
        (("init_multimodal_worker",), ("--disaggregation-mode", "pd"), "SglangHealthCheckPayload"),
        (("init_embedding",), (), "SglangEmbeddingHealthCheckPayload"),
        (("init_rerank",), (), "SglangRerankHealthCheckPayload"),
        (("init_image_diffusion",), (), "ImageDiffusionHealthCheckPayload"),
        (("init_video_diffusion",), (), "VideoGenerationHealthCheckPayload"),
        (("init_decode/gateway_leader", "gateway_child"), (), "SglangHealthCheckPayload"),
        (("init_multimodal_encode_worker",), (), None),
        (("init_decode/non_leader",), (), None),
    ],
)
def test_each_mode_builds_its_payload(start_paths, flags, expected):
    payload = payload_for(start_paths, flags)
    assert (payload.cls if payload else None) == expected


def _class_keys(tree: ast.Module) -> dict[str, set[str]]:
    """Each payload class's top-level keys as its source builds them with token ids (the
    `use_text_input` branch aside), its parent's when it adds none, plus what to_dict adds."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    keys: dict[str, set[str]] = {}
    for name, node in classes.items():
        found: set[str] = set()
        skipped = {
            id(child)
            for branch in ast.walk(node)
            if isinstance(branch, ast.If) and "use_text_input" in ast.unparse(branch.test)
            for stmt in branch.body
            for child in ast.walk(stmt)
        }
        for child in ast.walk(node):
            if id(child) in skipped:
                continue
            if isinstance(child, ast.Assign) and "default_payload" in ast.unparse(child.targets[0]):
                if isinstance(child.value, ast.Dict):
                    found |= {ast.literal_eval(k) for k in child.value.keys if k is not None}
                elif isinstance(child.targets[0], ast.Subscript):
                    found.add(ast.literal_eval(child.targets[0].slice))
            if isinstance(child, ast.Assign) and ast.unparse(child.targets[0]).startswith(
                "payload[HEALTH_CHECK_KEY]"
            ):
                found.add("_HEALTH_CHECK")
        bases = [ast.unparse(b) for b in node.bases]
        keys[name] = found or next((keys[b] for b in bases if b in keys), set())
    return keys


def test_the_payload_table_is_what_the_installed_dynamo_builds():
    source = (sglang_package_dir() / "health_check.py").read_text()
    built = _class_keys(ast.parse(source))
    for name, payload in PAYLOADS.items():
        assert set(payload.keys) == built[name], name


def test_each_init_function_hands_serve_endpoint_the_payload_named_for_it():
    """The start path table against the installed init modules: the payload classes each
    init function names (a decode worker's disaggregated one among them)."""
    named: dict[str, set[str]] = {}
    for module in sglang_package_dir().glob("init_*.py"):
        for node in ast.parse(module.read_text()).body:
            if isinstance(node, ast.AsyncFunctionDef):
                named[node.name] = {
                    n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in PAYLOADS
                }
    named["init_rerank"] = named["_init_pooling"]
    named["init_embedding"] = named["_init_pooling"]
    for path in ("init_decode", "init_prefill", "init_multimodal_worker", "init_embedding",
                 "init_rerank", "init_image_diffusion", "init_video_diffusion",
                 "init_llm_diffusion", "init_multimodal_prefill_worker",
                 "init_multimodal_encode_worker"):
        payload = payload_for((path,), ())
        assert (payload.cls in named[path]) if payload else not named[path], (path, named[path])
    decode = payload_for(("init_decode",), ("--disaggregation-mode", "decode"))
    assert decode is not None and decode.cls in named["init_decode"]


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("1.0.2", "SglangHealthCheckPayload"),
        ("1.5.1", "SglangHealthCheckPayload"),
        ("1.6.1", "SglangEmbeddingHealthCheckPayload"),
        (None, "SglangEmbeddingHealthCheckPayload"),
    ],
)
def test_an_older_release_is_judged_by_the_payload_it_builds(release, expected):
    """Before 1.6 init_embedding built the generate-shaped canary (#14680): the message says
    what that release hands serve_endpoint, not what 1.6.1 does."""
    payload = payload_for(("init_embedding",), (), release)
    assert payload is not None and payload.cls == expected


@pytest.mark.nightly
@pytest.mark.parametrize("release", ["1.0.2", "1.1.1", "1.2.1", "1.3.1", "1.4.2", "1.5.1"])
def test_the_older_payloads_are_what_each_built_release_builds(release):
    """Each built release's init_embedding.py against the table (bash ci/setup.sh --dynamo)."""
    from discovery_harness.history.run import DEFAULT_ENVS

    pattern = f"dynamo-{release}/lib/python3*/site-packages/dynamo/sglang/init_embedding.py"
    found = sorted(DEFAULT_ENVS.glob(pattern))
    if not found:
        pytest.skip(f"not built here: bash ci/setup.sh --dynamo {release}")
    tree = ast.parse(found[0].read_text())
    built = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id.endswith("HealthCheckPayload")}
    payload = payload_for(("init_embedding",), (), release)
    assert payload is not None and built == {payload.cls}, built
