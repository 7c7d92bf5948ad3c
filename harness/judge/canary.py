"""The health canary, judged from a worker's own log: how many health checks reached its
handler and succeeded, and every one its handler rejected.

With DYN_HEALTH_CHECK_ENABLED the runtime sends each endpoint's `health_check_payload` to its
own handler (in process, not over the request plane) once the endpoint has been idle for
DYN_CANARY_WAIT_TIME, and marks the endpoint not ready when it fails. The runtime says so
only in its log (`dynamo_runtime::health_check` at debug for a success, WARN for a failure),
so the log is the record. Pure: the caller reads the log and decides up to when it counts
(a canary sent after the harness began stopping the worker fails with "Event loop is
closed": a teardown artefact, not a contract break).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

from packaging.specifiers import SpecifierSet

from discovery_harness.judge.checks import GENERATE_ENDPOINT, WorkerView, named
from discovery_harness.model.violations import CANARY_NEVER_RAN, CANARY_REJECTED, Violation

_SENT = re.compile(r"Canary timer expired for (?P<endpoint>\S+), sending health check")
_SENDING = re.compile(r"Sending health check to (?P<endpoint>\S+) via")
_SUCCEEDED = re.compile(r"Health check successful for (?P<endpoint>\S+)")
# Every way 1.6.1's health_check.rs reports a canary that did not come back well.
_FAILED = re.compile(
    r"Health check (?:error response from|timeout for|request failed for) "
    r"(?P<endpoint>[^\s:]+):?(?P<detail>.*)"
    r"|Failed to send health check for (?P<unsent>[^\s:]+):?(?P<why>.*)"
)
# A real request on the request plane (the canary goes through the local registry instead):
# while one is being served, a handler error inside a canary's flight may be that request's.
_REAL_REQUEST = re.compile(
    r"push_handler: request (?P<state>received|completed)\b.*?request_id=(?P<id>[\w-]+)"
)
_DYNAMO_MESSAGE = re.compile(r'message: "(?P<message>(?:[^"\\]|\\.)*)"')
# A Python handler's own error line (its logger at ERROR, target "module.function"), e.g.
# "ERROR video_generation_handler.generate: Error in video generation: ...". The runtime's
# own lines name Rust targets ("a::b"): the system server's access line for a 503 it answered
# (`tower_http::trace::on_failure`, the harness's own /health reads) is never the handler's.
_HANDLER_ERROR = re.compile(r"Z\s+ERROR\s+(?P<target>[\w.]+): (?P<error>.+)")
# The same error once sglang's Engine has started: its launch calls configure_logger, which
# replaces the root logger's handlers with its own format ("[2026-12-08 00:44:04] message":
# no level, no target), so a handler's error is known by its words.
_SGLANG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] ")
_SGLANG_ERROR = re.compile(_SGLANG_LINE.pattern + r"(?P<error>(?:Error|Exception)\b.+)")
# A runtime line inside a span ("ERROR handle_payload: dynamo_runtime::...::push_handler: ..."):
# the request plane's, for a real request (the canary goes through the local registry).
_RUST_TARGET = re.compile(r"^\w+(?:::\w+)+: ")
# The other endpoints a dynamo.sglang worker serves beside generate (1.6.1's handler_base and
# init_*.py): a line logged by the function of one of them is that endpoint's, not the canary's.
OTHER_ENDPOINTS = frozenset(
    {"clear_kv_blocks", "load_lora", "unload_lora", "list_loras", "update_weights_from_disk"}
)
ERROR_CHARS = 240  # the handler's error as the message quotes it (the evidence has it whole)
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z")


@dataclass(frozen=True)
class CanaryPayload:
    """The payload a mode hands serve_endpoint: its class in dynamo/sglang/health_check.py
    and the top-level keys 1.6.1 builds (token ids, not text: the harness's default)."""

    cls: str
    keys: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.cls} (top-level keys {', '.join(self.keys)})"


_GENERATE_KEYS = (
    "token_ids",
    "stop_conditions",
    "sampling_options",
    "eos_token_ids",
    "annotations",
)
PAYLOADS = {
    payload.cls: payload
    for payload in (
        CanaryPayload("SglangHealthCheckPayload", _GENERATE_KEYS),
        CanaryPayload(
            "SglangDisaggHealthCheckPayload", ("bootstrap_info", *_GENERATE_KEYS, "_HEALTH_CHECK")
        ),
        CanaryPayload(
            "SglangPrefillHealthCheckPayload", ("bootstrap_info", *_GENERATE_KEYS, "_HEALTH_CHECK")
        ),
        CanaryPayload("SglangEmbeddingHealthCheckPayload", ("model", "input")),
        CanaryPayload("SglangRerankHealthCheckPayload", ("model", "query", "documents")),
        CanaryPayload(
            "ImageDiffusionHealthCheckPayload",
            (
                "prompt",
                "model",
                "n",
                "size",
                "num_inference_steps",
                "guidance_scale",
                "response_format",
            ),
        ),
        CanaryPayload(
            "VideoGenerationHealthCheckPayload",
            ("prompt", "model", "seconds", "size", "response_format", "nvext"),
        ),
    )
}
# Which payload each start path builds (read from 1.6.1's init_*.py); None: it serves no
# generate endpoint with a payload (the encoder: "Encode has no engine canary payload"; a
# multi-node follower and a gateway leader serve nothing).
_BY_START_PATH: dict[str, str | None] = {
    "init_decode": "SglangHealthCheckPayload",
    "gateway_child": "SglangHealthCheckPayload",
    "init_llm_diffusion": "SglangHealthCheckPayload",
    "init_multimodal_worker": "SglangHealthCheckPayload",
    "init_prefill": "SglangPrefillHealthCheckPayload",
    "init_multimodal_prefill_worker": "SglangPrefillHealthCheckPayload",
    "init_embedding": "SglangEmbeddingHealthCheckPayload",
    "init_rerank": "SglangRerankHealthCheckPayload",
    "init_image_diffusion": "ImageDiffusionHealthCheckPayload",
    "init_video_diffusion": "VideoGenerationHealthCheckPayload",
    "init_multimodal_encode_worker": None,
}
# Where an older release builds another payload than 1.6.1 for a start path (read from each
# release's own init_*.py): (start path, releases, payload class).
_OLDER_PAYLOADS: tuple[tuple[str, str, str], ...] = (
    # ai-dynamo#14680: init_embedding handed serve_endpoint the generate-shaped payload
    # (1.1.1: init_embedding.py line 44; 1.5.1: line 72), fixed in 1.6.
    ("init_embedding", ">=1.0,<1.6", "SglangHealthCheckPayload"),
)
_DECODE_MODE = ("--disaggregation-mode", "decode")


def payload_for(
    start_paths: Sequence[str], flags: Sequence[str], release: str | None = None
) -> CanaryPayload | None:
    """The canary payload a worker's mode builds (in `release`; None: as 1.6.1 does): the
    last start path that serves decides (a gateway's children, not its leader); a decode
    worker of a disaggregated pair sends the disaggregated payload (init_decode /
    init_multimodal_worker in DECODE mode)."""
    serving = [p for p in start_paths if p in _BY_START_PATH]
    if not serving or _BY_START_PATH[serving[-1]] is None:
        return None
    cls = _BY_START_PATH[serving[-1]]
    for path, releases, older in _OLDER_PAYLOADS:
        if release and path == serving[-1] and SpecifierSet(releases).contains(release, True):
            cls = older
    pairs = list(pairwise(flags))
    if cls == "SglangHealthCheckPayload" and _DECODE_MODE in pairs:
        cls = "SglangDisaggHealthCheckPayload"
    return PAYLOADS[str(cls)]


@dataclass(frozen=True)
class CanaryFailure:
    error: str  # the handler's exception as Dynamo quotes it (else the line's own words)
    line: str
    # The handler logged an error for the canary but answered it as a response, so the
    # runtime counted a success (1.6.1's video handler turns every exception into one).
    swallowed: bool = False


@dataclass(frozen=True)
class CanaryLog:
    """One endpoint's canaries as its worker logged them."""

    sent: int = 0
    succeeded: int = 0
    failures: tuple[CanaryFailure, ...] = ()
    lines: tuple[str, ...] = ()  # every canary line counted, in order

    @property
    def reached(self) -> int:
        """Health checks that came back from the handler, well or not."""
        return self.succeeded + len(self.failures)


def line_time(line: str) -> float | None:
    """The wall time of a Dynamo log line (its leading UTC stamp); None: no stamp."""
    match = _STAMP.match(line)
    if match is None:
        return None
    return datetime.fromisoformat(match.group(1) + "+00:00").timestamp()


def read_canaries(
    lines: Sequence[str], endpoint: str = GENERATE_ENDPOINT, until: float | None = None
) -> CanaryLog:
    """Count `endpoint`'s canaries in a worker's log lines (colours removed), ignoring
    lines stamped after `until` (wall time the harness began stopping it; None: all).

    Between a canary's send and its outcome only the handler's own error counts against it
    (`handler_error`), and only while no real request is being served (its error would be
    the real request's: the next idle canary judges the handler again); a gateway's
    children log into one file, so several canaries may be in flight at once, each closed by
    its own outcome line."""
    sent = succeeded = 0
    failures: list[CanaryFailure] = []
    counted: list[str] = []
    in_flight = 0  # canaries sent and not yet come back (the endpoint was idle)
    swallowed: str | None = None  # an error the handler logged meanwhile
    collecting = False  # reading that error's own lines
    serving: set[str] = set()  # real requests received and not yet completed
    for line in lines:
        if until is not None and (stamp := line_time(line)) is not None and stamp > until:
            break
        if real := _REAL_REQUEST.search(line):
            if real["state"] == "received":
                serving.add(real["id"])
            else:
                serving.discard(real["id"])
            collecting = False
            continue
        if (match := _SENT.search(line)) and match["endpoint"] == endpoint:
            sent += 1
            in_flight, collecting = in_flight + 1, False
        elif (match := _SENDING.search(line)) and match["endpoint"] == endpoint:
            pass
        elif (match := _SUCCEEDED.search(line)) and match["endpoint"] == endpoint:
            if swallowed is None:
                succeeded += 1
            else:
                failures.append(CanaryFailure(_shorten(swallowed), line, swallowed=True))
            in_flight, swallowed, collecting = max(in_flight - 1, 0), None, False
        elif (match := _FAILED.search(line)) and endpoint in (match["endpoint"], match["unsent"]):
            failures.append(CanaryFailure(_handler_error(match), line))
            in_flight, swallowed, collecting = max(in_flight - 1, 0), None, False
        elif (
            in_flight
            and swallowed is None
            and not serving  # else the error may be the real request's
            and (error := handler_error(line)) is not None
        ):
            swallowed, collecting = error, True
        elif collecting and _continues(line):
            swallowed = f"{swallowed} {line}"  # the error's own lines (a validation's fields)
            continue
        else:
            collecting = False
            continue
        counted.append(line)
    return CanaryLog(sent, succeeded, tuple(failures), tuple(counted))


def handler_error(line: str) -> str | None:
    """The error a Python handler logged on this line, if it is one: a Python logger's ERROR
    (never a Rust target such as the system server's access line for a 503 it answered),
    and not from the function of another endpoint the worker serves."""
    match = _HANDLER_ERROR.search(line)
    if match is None:
        logged_by_sglang = _SGLANG_ERROR.match(line)
        return logged_by_sglang["error"] if logged_by_sglang else None
    if match["target"].rsplit(".", 1)[-1] in OTHER_ENDPOINTS:
        return None
    if _RUST_TARGET.match(match["error"]):
        return None
    return match["error"]


def _handler_error(match: re.Match[str]) -> str:
    detail = (match["detail"] if match["endpoint"] else match["why"]) or ""
    quoted = _DYNAMO_MESSAGE.search(detail)
    text = quoted["message"] if quoted else detail
    return _shorten(text.replace('\\"', '"').replace("\\n", " ")) or match.group(0).strip()


def _continues(line: str) -> bool:
    """A line of the error message itself: no stamp of its own, before any traceback."""
    stamped = _STAMP.match(line) or _SGLANG_LINE.match(line)
    return bool(line.strip()) and stamped is None and not line.startswith(
        ("Traceback", "  File ", "    ")
    )


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def judge(
    worker: WorkerView,
    payload: CanaryPayload | None,
    log: CanaryLog,
    evidence: str = "",
    waited: str | None = None,
) -> list[Violation]:
    """A worker's canary against its contract: every health check its handler got must
    succeed; with `waited` (the proof was waited for: what and how long), at least one must
    have reached the handler. A worker whose mode builds no payload has no canary."""
    if payload is None:
        return []
    who = named(worker)
    if log.failures:
        first = log.failures[0]
        return [
            Violation(
                CANARY_REJECTED,
                worker.role,
                f"{who} rejected its own health-check canary: {len(log.failures)} of "
                f"{log.reached} health check(s) failed\n"
                f"  payload:  {payload.describe()}, the one its mode builds\n"
                f'  error:    "{first.error}"\n'
                f"  effect:   {_effect(first)}",
                _canary_evidence(worker, log, evidence),
            )
        ]
    if waited is not None and log.succeeded == 0:
        return [
            Violation(
                CANARY_NEVER_RAN,
                worker.role,
                f"{who}: no health check reached its handler\n"
                f"  payload:  {payload.describe()}\n"
                f"  seen:     {log.sent} canary timer(s) expired, {log.reached} came back\n"
                f"  waited:   {waited}",
                _canary_evidence(worker, log, evidence),
            )
        ]
    return []


def _effect(failure: CanaryFailure) -> str:
    if failure.swallowed:
        return (
            "none: the handler answered the canary with an error response, so the runtime "
            "logged a success and the worker stays ready while its handler fails"
        )
    return (
        f"the runtime marks its {GENERATE_ENDPOINT} endpoint not ready after each failure "
        "(with endpoint health in use, /health answers 503)"
    )


def _canary_evidence(worker: WorkerView, log: CanaryLog, evidence: str) -> str:
    shown = "\n".join(f"    | {line}" for line in log.lines[-8:]) or "    (no canary line)"
    head = f"worker '{worker.role}' (pid {worker.pid}) canary lines ({len(log.lines)}, last 8):"
    return f"{head}\n{shown}" + (f"\n{evidence}" if evidence else "")
