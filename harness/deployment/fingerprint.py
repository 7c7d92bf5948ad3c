"""A deployment's discovery state and answers with what differs between any two runs (ids,
ports, namespace, model name, timestamps) replaced by placeholders, so two runs of one topology
can be compared field by field: e.g. workers forked from the template against fresh ones."""

from __future__ import annotations

import json
import re
from typing import Any

from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.serving.answers import sse_events
from discovery_harness.serving.requests import Reply

_ADDRESS = re.compile(r"(127\.0\.0\.1|localhost):\d+")
# Fields of OpenAI answers that differ on every call.
_PER_CALL_FIELDS = frozenset({"id", "created", "system_fingerprint"})


def discovery_fingerprint(state: DiscoveryState, namespace: str, model_name: str) -> dict:
    """Every key of the namespace and its value, normalised; instance ids become the
    component of the worker that owns them."""
    owners = {i.instance_id: i.component for i in state.instances(namespace)}

    def text(value: str) -> str:
        value = value.replace(namespace, "<ns>").replace(model_name, "<model>")
        for instance_id, component in owners.items():
            value = value.replace(f"{instance_id:016x}", f"<id:{component}>")
            value = value.replace(f"{instance_id:x}", f"<id:{component}>")
        return _ADDRESS.sub(r"\1:<port>", value)

    def walk(value: Any, field: str = "") -> Any:
        if isinstance(value, dict):
            return {text(k): walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, field) for v in value]
        if isinstance(value, str):
            return text(value)
        if isinstance(value, int) and value in owners:
            return f"<id:{owners[value]}>"
        if isinstance(value, int) and field.endswith("port"):
            return "<port>"
        return value

    fingerprint = {}
    for key, raw in state.raw.items():
        if f"/{namespace}/" not in key:
            continue
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw.decode(errors="replace")
        fingerprint[text(key)] = walk(value)
    return fingerprint


def answer_fingerprint(reply: Reply, model_name: str) -> tuple[str, int, Any]:
    """A reply's kind, status and body, without per-call ids and timestamps."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items() if k not in _PER_CALL_FIELDS}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            return value.replace(model_name, "<model>")
        return value

    body: Any
    if reply.body.startswith("data:"):  # a stream, as a whole (its chunking is timing's)
        events, _ = sse_events(reply.body)
        body = stream_as_a_whole(events)
    else:
        try:
            body = json.loads(reply.body)
        except ValueError:
            body = reply.body
    return reply.kind, reply.status, walk(body)


def stream_as_a_whole(events: list[Any]) -> dict[str, Any]:
    """A stream's events as one answer: each choice's text (chat deltas or completion text)
    joined, its role and last finish reason, and the last event's other fields. Where a
    stream is cut into chunks depends on timing (sglang coalesces what arrived while the
    client read), on a GPU as on the CPU tier, so only the whole is compared."""
    choices: dict[int, dict[str, Any]] = {}
    whole: dict[str, Any] = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        whole.update({key: value for key, value in event.items() if key != "choices"})
        for choice in event.get("choices") or []:
            merged = choices.setdefault(choice.get("index", 0), {"text": ""})
            delta = choice.get("delta") or {}
            merged["text"] += delta.get("content") or choice.get("text") or ""
            if delta.get("role"):
                merged["role"] = delta["role"]
            if choice.get("finish_reason") is not None:
                merged["finish_reason"] = choice["finish_reason"]
    whole["choices"] = [choices[index] for index in sorted(choices)]
    return whole


def differences(left: Any, right: Any, path: str = "") -> list[str]:
    """Field-by-field differences between two fingerprints, each as `path: left != right`."""
    if isinstance(left, dict) and isinstance(right, dict):
        found = []
        for key in sorted(set(left) | set(right), key=str):
            if key not in left or key not in right:
                where = "only in the second" if key not in left else "only in the first"
                found.append(f"{path}/{key}: {where}")
            else:
                found += differences(left[key], right[key], f"{path}/{key}")
        return found
    sequences = (list, tuple)
    if isinstance(left, sequences) and isinstance(right, sequences) and len(left) == len(right):
        return [
            d
            for i, (a, b) in enumerate(zip(left, right, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    return [] if left == right else [f"{path}: {left!r} != {right!r}"]
