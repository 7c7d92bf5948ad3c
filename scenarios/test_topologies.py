"""Every topology in the catalogue registers as its contract says and serves its requests."""

from __future__ import annotations

import pytest

from harness.plugin import topology_param
from scenarios.catalogue import CATALOGUE

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge]


@pytest.mark.parametrize("topology", [topology_param(t) for t in CATALOGUE])
def test_registers_and_serves(topology, deploy):
    deployment = deploy(topology)
    replies = [deployment.send(kind) for kind in topology.requests]
    assert all(reply.ok for reply in replies), "\n".join(r.describe() for r in replies)
    assert deployment.advertised_addresses() == {"127.0.0.1"}
    deployment.verify()
