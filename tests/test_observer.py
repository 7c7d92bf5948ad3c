"""The discovery observer against a real etcd: typed records, prompt wake-ups, deletes."""

from __future__ import annotations

import threading
import time

import grpc
import pytest

from discovery_harness.common.deadline import Deadline
from discovery_harness.discovery.observer import DiscoveryObserver
from tests.fakes import NS, card_entry, instance_entry

pytestmark = pytest.mark.e2e


@pytest.fixture
def observer(infra_endpoints):
    obs = DiscoveryObserver(infra_endpoints.etcd).start()
    yield obs
    obs.client.delete_prefix(f"v1/instances/{NS}/")
    obs.client.delete_prefix(f"v1/mdc/{NS}/")
    obs.stop()


def test_keys_written_before_start_are_seen(infra_endpoints):
    writer = DiscoveryObserver(infra_endpoints.etcd)
    writer.client.put(*instance_entry("early", 1, 25012))
    obs = DiscoveryObserver(infra_endpoints.etcd).start()
    try:
        assert [i.component for i in obs.state().instances(NS)] == ["early"]
    finally:
        writer.client.delete_prefix(f"v1/instances/{NS}/")
        obs.stop()


def test_a_wait_returns_promptly_after_the_write(observer):
    key, value = card_entry("backend", 7, worker_type="decode", needs=[["prefill"]])
    timer = threading.Timer(0.5, lambda: observer.client.put(key, value))
    timer.start()
    started = time.monotonic()
    card = observer.wait_for(lambda s: next(iter(s.cards(NS)), None), Deadline(10))
    waited = time.monotonic() - started
    assert card is not None and card.worker_type == "decode" and card.needs == (("prefill",),)
    assert waited < 5  # woken by the watch, not by the deadline
    assert observer.first_put(key) is not None


def test_deletes_are_applied(observer):
    key, value = instance_entry("backend", 9, 25012)
    observer.client.put(key, value)
    observer.wait_for(lambda s: s.instances(NS), Deadline(10))
    observer.client.delete(key)
    gone = observer.wait_for(lambda s: not s.instances(NS), Deadline(10))
    assert gone
    assert [e.kind for e in observer.events if e.key == key] == ["put", "delete"]


def test_a_guard_ends_the_wait(observer):
    class Died(Exception):
        pass

    def guard() -> None:
        raise Died

    with pytest.raises(Died):
        observer.wait_for(lambda s: None, Deadline(30), guard=guard)


def test_direct_read_sees_what_the_watch_may_not_have_yet(observer):
    key, value = card_entry("backend", 11)
    observer.client.put(key, value)
    assert key in observer.read_now([f"v1/mdc/{NS}/"]).raw


def _put_once_etcd_answers(writer: DiscoveryObserver, key: str, value: bytes) -> None:
    """The writer is the test's, not the subject: its put waits for its channel to be ready
    (once, a put right after the restart met a connection still refused, under load)."""
    grpc.channel_ready_future(writer.client.channel).result(timeout=10)
    writer.client.put(key, value)


def test_the_observer_follows_etcd_through_a_restart(tmp_path):
    """The watch breaks when etcd restarts; the observer reads and watches again, and what
    changed meanwhile arrives as events."""
    from discovery_harness.processes.infra.local_process import LocalProcessProvider

    provider = LocalProcessProvider()
    endpoints = provider.start(tmp_path)
    obs = DiscoveryObserver(endpoints.etcd).start()
    try:
        obs.client.put(*instance_entry("before", 1, 25012))
        key_before = instance_entry("before", 1, 25012)[0]
        assert obs.wait_for(lambda s: key_before in s.raw, Deadline(5))
        provider.restart("etcd", endpoints)
        writer = DiscoveryObserver(endpoints.etcd)
        _put_once_etcd_answers(writer, *instance_entry("after", 2, 25013))
        writer.client.delete(key_before)
        key_after = instance_entry("after", 2, 25013)[0]
        assert obs.wait_for(
            lambda s: key_after in s.raw and key_before not in s.raw, Deadline(30)
        ), obs.state().keys()
        assert any(e.kind == "delete" and e.key == key_before for e in obs.events)
        writer.stop()
    finally:
        obs.stop()
        provider.stop()


def test_the_file_store_is_observed_like_etcd(tmp_path):
    """The same observer over Dynamo's file backend: one file per key, url-encoded."""
    from discovery_harness.discovery.sources import FileSource

    source = FileSource(tmp_path / "kv")
    key, value = instance_entry("file", 3, 25014)
    early = source.path_of(key)
    early.parent.mkdir(parents=True)
    early.write_bytes(value)
    obs = DiscoveryObserver(source).start()
    try:
        assert [i.component for i in obs.state().instances(NS)] == ["file"]
        card_key, card_value = card_entry("file", 3)
        later = source.path_of(card_key)
        later.parent.mkdir(parents=True, exist_ok=True)
        later.write_bytes(card_value)
        assert obs.wait_for(lambda s: card_key in s.raw, Deadline(10))
        early.unlink()
        assert obs.wait_for(lambda s: key not in s.raw, Deadline(10))
        assert later.name == "h-unit-abc123%2Ffile%2Fgenerate%2F3"
        assert obs.read_now(["v1/mdc/"]).raw == {card_key: card_value}
    finally:
        obs.stop()
