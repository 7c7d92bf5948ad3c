"""Start orders. The GPU tier's layout order, run on the CPU tier (co-located workers one at
a time, each serving before the next): the only place that path runs without a GPU. And every
permutation of the multi-worker topologies, workers started one after another, each
registered (or left waiting for its peers) before the next: the model is never listed before
its topology can serve, and no request gets a 404 or 503 once it is listed."""

from __future__ import annotations

import itertools

import pytest

from discovery_harness.plugin import topology_param
from discovery_harness_scenarios.catalogue import DISAGGREGATED, MM_ENCODE_P_D, MM_ENCODE_PD

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge, pytest.mark.gpu_0]


@pytest.mark.parametrize("topology", [topology_param(t) for t in (MM_ENCODE_P_D, MM_ENCODE_PD)])
def test_layout_start_order_registers_and_serves(topology, deploy):
    deployment = deploy(topology, sequential=True)
    order = topology.gpu.packed.start_order
    assert len(order) >= 2, f"{topology.name}'s packed layout has no start order to check"
    rows = {row.role: row for row in deployment.timeline()}
    assert set(order) <= rows.keys(), (order, sorted(rows))
    for earlier, later in itertools.pairwise(order):
        assert rows[later].started >= rows[earlier].instance_at, (earlier, later, rows)
    replies = [deployment.send(kind) for kind in topology.requests]
    assert replies, f"{topology.name} declares no request to send"
    assert all(reply.ok for reply in replies), "\n".join(r.describe() for r in replies)
    deployment.verify()


def _orders() -> list[object]:
    """Both orders of P/D and E+PD's PD-first on every change; the encoder first (it waits
    for its PD worker: the next starts only after the card grace, ~5 s) and the six of E+P+D
    nightly."""
    cases = []
    for topology, extra in ((DISAGGREGATED, ()), (MM_ENCODE_PD, ()), (MM_ENCODE_P_D, ("nightly",))):
        roles = [w.role for w in topology.workers]
        for order in itertools.permutations(roles):
            encoder_first = topology.name == MM_ENCODE_PD.name and order[0] == "mm-encoder"
            schedule = (*extra, "nightly") if encoder_first else extra
            marks = [getattr(pytest.mark, m) for m in schedule]
            param = topology_param(topology, *marks)
            cases.append(
                pytest.param(
                    topology, order, id=f"{topology.name}:{'>'.join(order)}", marks=param.marks
                )
            )
    return cases


@pytest.mark.parametrize(("topology", "order"), _orders())
def test_every_start_order_lists_only_a_servable_model(topology, order, deploy):
    deployment = deploy(topology, order=order)
    started = [row.role for row in sorted(deployment.timeline(), key=lambda row: row.started)]
    assert started == list(order) == list(deployment.plan.launch_order)  # what `plan` prints
    replies = [deployment.send(kind) for kind in topology.requests]
    assert replies, f"{topology.name} declares no request to send"
    assert all(reply.ok for reply in replies), "\n".join(r.describe() for r in replies)
    deployment.verify()
