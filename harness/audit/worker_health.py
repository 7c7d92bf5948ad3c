"""The audit's reading of workers' own `/health` (Kubernetes' readiness probe), for workers
whose system server URL the user gives (`--worker-health URL`): discovery does not carry it
(an instance key holds only the request-plane address), `up` prints each worker's. A worker
that does not answer 200 ready within the grace is `never-ready`."""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from discovery_harness.common.deadline import Deadline
from discovery_harness.common.tls import shared_context
from discovery_harness.model.violations import NEVER_READY, Violation

POLL_S = 0.2


@dataclass(frozen=True)
class WorkerReading:
    url: str  # the worker's system server, e.g. http://127.0.0.1:PORT
    code: int | None  # the last /health answer's status (None: nothing answered)
    body: str  # the last answer's body, cut
    waited_s: float

    @property
    def ready(self) -> bool:
        return self.code == 200 and '"ready"' in self.body

    def line(self) -> str:
        said = f"{self.code} {self.body}" if self.code is not None else "no answer"
        return f"worker /health {self.url}/health: {said}"

    def violation(self) -> Violation | None:
        if self.ready:
            return None
        return Violation(
            NEVER_READY,
            self.url,
            f"the worker at {self.url} did not say ready on /health within "
            f"{self.waited_s:.0f} s: Kubernetes' readiness probe would keep it out of service; "
            f"last answer: {self.code if self.code is not None else 'none'} {self.body}",
        )


def read(url: str, grace_s: float) -> WorkerReading:
    """Its /health, read until it says ready or the grace runs out (bounded in time)."""
    base = url.rstrip("/").removesuffix("/health")
    deadline = Deadline(grace_s)
    started = time.monotonic()
    code: int | None = None
    body = ""
    with httpx.Client(timeout=1.0, trust_env=False, verify=shared_context()) as client:
        while True:
            try:
                answer = client.get(f"{base}/health")
                code, body = answer.status_code, answer.text.strip()[:200]
            except httpx.HTTPError as error:
                code, body = None, type(error).__name__
            reading = WorkerReading(base, code, body, time.monotonic() - started)
            if reading.ready or deadline.expired:
                return reading
            time.sleep(min(POLL_S, deadline.remaining))
