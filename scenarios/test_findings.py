"""What Dynamo 1.6.1 does at the edges the catalogue steers around, asserted as measured.
Each is xfail(strict=True): when Dynamo changes, the test XPASSes and says so."""

from __future__ import annotations

import dataclasses

import pytest

from discovery_harness.model.violations import ContractFailure
from discovery_harness.plugin import topology_param
from discovery_harness_scenarios.catalogue import GATEWAY

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.nightly, pytest.mark.gpu_0]

_GATEWAY_PINNED = dataclasses.replace(
    GATEWAY,
    name="gateway-pinned-port",
    workers=(dataclasses.replace(GATEWAY.workers[0], pin_request_plane=True),),
)


@pytest.mark.xfail(
    strict=True,
    raises=ContractFailure,
    reason="Dynamo 1.6.1: gateway children inherit the leader's DYN_TCP_RPC_PORT; the second "
    "child publishes its model card, then fails to bind ('Address already in use'), leaving "
    "a card without an instance, and the leader exits ('gateway child ... exited')",
)
@pytest.mark.long  # ~30 s of an expected failure; the gateway itself: test_topologies
@pytest.mark.parametrize("topology", [topology_param(_GATEWAY_PINNED)])
def test_gateway_with_a_pinned_request_plane_port_registers_every_child(topology, deploy):
    deployment = deploy(topology)
    assert all(deployment.send(kind).ok for kind in topology.requests)
    deployment.verify()
