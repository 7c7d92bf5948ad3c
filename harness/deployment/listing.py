"""When does the frontend first list a model, and was its topology complete at that moment?"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from discovery_harness.common.deadline import Deadline
from discovery_harness.common.tls import shared_context
from discovery_harness.serving.listing import listed_ids


class MissingCards(Protocol):
    """What reads etcd directly for the cards a topology still lacks (its DeploymentView)."""

    def missing_cards(self) -> list[str]: ...


@dataclass
class ListingWatch:
    """Polls /v1/models while workers register, to see *when* the model appears, and reads
    etcd directly at that moment: a worker card missing from etcd then is proof that the
    frontend listed the model before its topology was complete (never a false alarm)."""

    base_url: str
    model_name: str
    cards: MissingCards
    listed_at: float | None = None  # wall time
    missing_when_listed: list[str] = field(default_factory=list)
    # What GET /v1/models/{model}/ready answered at that moment (the frontend's own view).
    ready_when_listed: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="listing-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=2.0, verify=shared_context()) as client:
            while not self._stop.is_set():
                if self.listed(client):
                    self.missing_when_listed = self.cards.missing_cards()
                    self.ready_when_listed = self.readiness(client)
                    self.listed_at = time.time()
                    return
                self._stop.wait(0.05)

    def listed(self, client: httpx.Client) -> bool:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            return self.model_name in listed_ids(client.get("/v1/models").json())
        return False

    def readiness(self, client: httpx.Client) -> str:
        path = f"/v1/models/{self.model_name}/ready"
        try:
            reply = client.get(path)
        except httpx.HTTPError as error:
            return f"GET {path} failed: {error}"
        return f"GET {path} -> {reply.status_code} {reply.text[:1000]}"

    def wait(self, deadline: Deadline) -> bool:
        if self._thread is not None:
            self._thread.join(timeout=deadline.remaining)
        return self.listed_at is not None

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def await_listing(base_url: str, model_name: str, listed: bool, deadline: Deadline) -> float | None:
    """When (monotonic) the model's presence in GET /v1/models became `listed`; None if not
    by the deadline. A bounded poll: the frontend has no event for its listings."""
    with httpx.Client(base_url=base_url, timeout=2.0, verify=shared_context()) as client:
        while True:
            try:
                present = model_name in listed_ids(client.get("/v1/models").json())
            except (httpx.HTTPError, ValueError):
                present = False
            if present == listed:
                return time.monotonic()
            if deadline.expired:
                return None
            threading.Event().wait(deadline.slice(0.05))
