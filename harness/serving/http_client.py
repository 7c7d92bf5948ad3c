"""An HTTP client for the frontend that never retries and remembers every response.

Retries would hide exactly the failures we are here to see (vLLM's test server does the same).
Every exchange is recorded with its time, so a scenario can fail on any 503 that came after
it was declared ready and list each one.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from discovery_harness.common.tls import shared_context


@dataclass(frozen=True)
class Exchange:
    wall_time: float
    method: str
    path: str
    status: int
    body: str
    after_ready: bool
    # The id the harness sent as x-request-id (the frontend's own, if it answered another):
    # what finds the request's lines in the frontend's log and its worker.
    request_id: str = ""
    sent_at: float = 0.0  # wall time the request went out (wall_time: its answer)
    # Malformed on purpose (serving/bad_input.py): its 4xx is the API's promise kept, judged
    # there, not an error for a listed model.
    bad_input: bool = False

    def describe(self) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.wall_time))
        frac = f"{self.wall_time % 1:.3f}"[1:]
        return f"{stamp}{frac} {self.method} {self.path} -> {self.status}: {self.body[:300]}"


REQUEST_ID_HEADER = "x-request-id"


def request_id_of(reply: httpx.Response) -> str:
    """The id an answer is known by in the logs: the frontend's, else the one the harness sent."""
    return reply.headers.get(REQUEST_ID_HEADER) or reply.request.headers.get(REQUEST_ID_HEADER, "")


def new_request_id() -> str:
    """A request id the harness can find again in every log (it says whose it is)."""
    return f"harness-{uuid.uuid4().hex[:20]}"


class RecordingClient:
    """httpx with retries off; `exchanges` holds every request's outcome."""

    def __init__(self, base_url: str, timeout: float = 120.0) -> None:
        transport = httpx.HTTPTransport(retries=0, verify=shared_context())
        self._client = httpx.Client(base_url=base_url, timeout=timeout, transport=transport)
        self.base_url = base_url
        self.exchanges: list[Exchange] = []
        self._ready_at: float | None = None
        self._lock = threading.Lock()

    def answered_at(self, request_id: str) -> float | None:
        """When the request of this id was answered (None: no such exchange recorded)."""
        found = [e.wall_time for e in self.exchanges if request_id and e.request_id == request_id]
        return found[-1] if found else None

    def mark_ready(self) -> None:
        """From now on every 503 counts as a violation."""
        self._ready_at = time.time()

    @property
    def ready(self) -> bool:
        return self._ready_at is not None

    def _record(
        self,
        method: str,
        path: str,
        status: int,
        body: str,
        request_id: str,
        sent_at: float,
        bad_input: bool = False,
    ) -> None:
        with self._lock:
            self.exchanges.append(
                Exchange(
                    time.time(),
                    method,
                    path,
                    status,
                    body,
                    after_ready=self.ready,
                    request_id=request_id,
                    sent_at=sent_at,
                    bad_input=bad_input,
                )
            )

    def request(
        self, method: str, path: str, *, bad_input: bool = False, **kwargs: Any
    ) -> httpx.Response:
        request_id, sent_at = new_request_id(), time.time()
        headers = {**kwargs.pop("headers", {}), REQUEST_ID_HEADER: request_id}
        reply = self._client.request(method, path, headers=headers, **kwargs)
        answered = reply.headers.get(REQUEST_ID_HEADER, request_id)
        self._record(method, path, reply.status_code, reply.text, answered, sent_at, bad_input)
        return reply

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post_json(
        self, path: str, payload: dict[str, Any], *, bad_input: bool = False
    ) -> httpx.Response:
        return self.request("POST", path, json=payload, bad_input=bad_input)

    def stream_sse(self, path: str, payload: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        """POST a streaming request; return the status and the decoded `data:` events."""
        events: list[dict[str, Any]] = []
        raw: list[str] = []
        request_id, sent_at = new_request_id(), time.time()
        headers = {REQUEST_ID_HEADER: request_id}
        with self._client.stream("POST", path, json=payload, headers=headers) as reply:
            status = reply.status_code
            request_id = reply.headers.get(REQUEST_ID_HEADER, request_id)
            for line in _lines(reply):
                raw.append(line)
                if line.startswith("data:"):
                    data = line[len("data:") :].strip()
                    if data and data != "[DONE]":
                        events.append(json.loads(data))
        self._record("POST", path + " (stream)", status, "\n".join(raw), request_id, sent_at)
        return status, events

    def after_ready(self, status: int) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.after_ready and e.status == status]

    def close(self) -> None:
        self._client.close()


def _lines(reply: httpx.Response) -> Iterator[str]:
    if reply.status_code != 200:
        reply.read()
        yield from reply.text.splitlines()
        return
    yield from reply.iter_lines()
