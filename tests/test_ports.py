"""Ports: distinct, bindable, below the ephemeral range, and never shared across processes."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import socket

from discovery_harness.processes import ports


def test_ports_are_distinct_free_and_low():
    chosen = ports.allocate(20)
    try:
        assert len(set(chosen)) == 20
        assert all(ports.LOW <= p <= 32767 for p in chosen)
        for port in chosen:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", port))
    finally:
        ports.release(chosen)


def _allocate_in_child(
    queue: multiprocessing.Queue, done: multiprocessing.synchronize.Event
) -> None:
    queue.put(ports.allocate(30))
    # Stay alive until every sibling has allocated: a dead owner's ports are free again by
    # design, so an early exit would let a sibling reuse them legitimately.
    done.wait(60)


def test_parallel_processes_never_get_the_same_port():
    queue: multiprocessing.Queue = multiprocessing.Queue()
    done = multiprocessing.Event()
    workers = [
        multiprocessing.Process(target=_allocate_in_child, args=(queue, done)) for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    try:
        results = [queue.get(timeout=60) for _ in workers]
    finally:
        done.set()
        for worker in workers:
            worker.join(timeout=30)
    flat = [port for batch in results for port in batch]
    assert len(flat) == len(set(flat)) == 120


def test_a_port_in_use_is_skipped(monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]
        assert not ports._bindable(taken)
