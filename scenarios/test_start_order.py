"""The GPU tier's start order, run on the CPU tier: co-located workers start one at a time,
each serving before the next, and the topology still registers and serves. This is the only
place the sequential start is exercised without a GPU."""

from __future__ import annotations

import itertools

import pytest

from harness.plugin import topology_param
from scenarios.catalogue import MM_ENCODE_P_D, MM_ENCODE_PD

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge, pytest.mark.gpu_0]


@pytest.mark.parametrize("topology", [topology_param(t) for t in (MM_ENCODE_P_D, MM_ENCODE_PD)])
def test_layout_start_order_registers_and_serves(topology, deploy):
    deployment = deploy(topology, sequential=True)
    order = topology.gpu.packed.start_order
    rows = {row.role: row for row in deployment.timeline()}
    for earlier, later in itertools.pairwise(order):
        assert rows[later].started >= rows[earlier].instance_at, (earlier, later, rows)
    replies = [deployment.send(kind) for kind in topology.requests]
    assert all(reply.ok for reply in replies), "\n".join(r.describe() for r in replies)
    deployment.verify()
