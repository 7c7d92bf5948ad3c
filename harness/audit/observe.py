"""Read discovery until the verdict is known: a snapshot, then the watch; it stops as soon
as every instance has its card and every card its instance, or the grace of the ones still
lacking has run out. Never writes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from discovery_harness.common.deadline import Deadline
from discovery_harness.discovery.observer import DiscoveryObserver, DiscoveryState
from discovery_harness.discovery.sources import DiscoverySource, EtcdSource, FileSource
from discovery_harness.judge.discovered import pending
from discovery_harness.processes.infra.base import etcd_healthy


class Unreachable(RuntimeError):
    """The store or the frontend does not answer (exit 2)."""


@dataclass(frozen=True)
class Observed:
    state: DiscoveryState
    first_seen: dict[str, float]
    at: float  # wall time of the verdict
    where: str


def open_source(etcd: str | None, file_store: str | None) -> DiscoverySource:
    if file_store:
        root = Path(file_store)
        if not root.is_dir():
            raise Unreachable(f"file store {root} is not a directory")
        return FileSource(root)
    assert etcd is not None
    url = etcd if "://" in etcd else f"http://{etcd}"
    if not etcd_healthy(url):
        raise Unreachable(f"etcd at {url} does not answer (GET /health)")
    return EtcdSource(url)


def observe(source: DiscoverySource, grace: float) -> Observed:
    """Watch until nothing is pending (at most the grace after the last key appeared)."""
    observer = DiscoveryObserver(source)
    try:
        observer.start()
    except Exception as error:  # grpc's or the file system's own errors
        raise Unreachable(f"cannot read discovery at {source.where}: {error}") from None
    try:

        def first_seen(state: DiscoveryState) -> dict[str, float]:
            seen = {}
            for key in state.raw:
                event = observer.first_put(key)
                seen[key] = event.wall_time if event else time.time()
            return seen

        def known(state: DiscoveryState) -> bool:
            return not pending(state, first_seen(state), time.time(), grace)

        # Re-judged on every watch event, and as each lacking key's grace runs out.
        observer.wait_for(known, Deadline(grace + 1.0))
        state = observer.state()
        return Observed(state, first_seen(state), time.time(), source.where)
    finally:
        observer.stop()
