"""The same contracts on the other discovery backend and planes Dynamo offers: the file store
instead of etcd (the observer reads the files), NATS instead of TCP for requests, ZMQ instead
of NATS for events. Each deployment gets its own frontend with the same settings; the checks
are the ones every scenario runs."""

from __future__ import annotations

import pytest

from discovery_harness.deployment import FILE, NATS, ZMQ, Planes
from discovery_harness.plugin import topology_param
from discovery_harness.runtime.spawn import FRESH
from discovery_harness_scenarios.catalogue import AGGREGATED, MM_ENCODE_PD

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.gpu_0]

# The file backend and the ZMQ event plane are chosen by variables dynamo reads at import:
# their workers start fresh (the worker template refuses a fork that would freeze them).
PLANES = [
    ("file-discovery", Planes(discovery=FILE), FRESH, "nightly"),
    ("nats-requests", Planes(request=NATS), None, "pre_merge"),
    ("zmq-events", Planes(event=ZMQ), FRESH, "nightly"),
]


def _cases() -> list[object]:
    cases = []
    for topology in (AGGREGATED, MM_ENCODE_PD):
        for name, planes, spawn, schedule in PLANES:
            schedule = schedule if topology is AGGREGATED else "nightly"  # one on every run
            marks = topology_param(topology, getattr(pytest.mark, schedule)).marks
            cases.append(
                pytest.param(topology, planes, spawn, id=f"{topology.name}-{name}", marks=marks)
            )
    return cases


@pytest.mark.parametrize(("topology", "planes", "spawn"), _cases())
def test_registers_and_serves_on_other_planes(topology, planes, spawn, deploy):
    deployment = deploy(topology, planes=planes, spawn=spawn)
    replies = [deployment.send(kind) for kind in topology.requests]
    assert all(reply.ok for reply in replies), "\n".join(r.describe() for r in replies)
    assert deployment.advertised_addresses() <= {"127.0.0.1"}
    deployment.verify()
