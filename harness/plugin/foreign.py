"""A catalogue topology for a test of another suite: one marker, one fixture.

    @pytest.mark.discovery_topology("mm-encode-pd")
    def test_my_change_keeps_discovery(discovery_deployment):
        url = discovery_deployment.frontend_url        # http://127.0.0.1:PORT
        reply = httpx.post(f"{url}/v1/chat/completions", json={...})
        assert reply.status_code == 200

Before the body runs the topology is deployed (real etcd, NATS, frontend and dynamo.sglang
workers, on the tier the run chose) and ready: every worker registered as its contract says,
the model listed and served. At teardown it gets the same verdict every scenario gets, so a
contract broken at any moment of the test fails it. The marker's keyword arguments are the
`deploy` fixture's options (e.g. `frontend="own"`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from discovery_harness.deployment import Deployment
from discovery_harness.model import catalogue
from discovery_harness.plugin.deploy import DeployFn
from discovery_harness.plugin.scope import TOPOLOGY_MARKER
from discovery_harness.serving.requests import Reply


@dataclass(frozen=True)
class DeployedTopology:
    """What a test of another suite gets: where to send requests, and the deployment."""

    deployment: Deployment

    @property
    def frontend_url(self) -> str:
        return self.deployment.client.base_url

    @property
    def model(self) -> str:
        """The served model name requests must use."""
        return self.deployment.plan.model_name

    def send(self, kind: str) -> Reply:
        """One of the topology's request kinds (chat, completion, ...), judged as the
        scenarios judge it."""
        return self.deployment.send(kind)


@pytest.fixture
def discovery_deployment(deploy: DeployFn, request: pytest.FixtureRequest) -> DeployedTopology:
    """The topology named by the test's `discovery_topology` marker, deployed and ready."""
    marker = request.node.get_closest_marker(TOPOLOGY_MARKER)
    if marker is None or len(marker.args) != 1:
        pytest.fail(
            f"discovery_deployment needs @pytest.mark.{TOPOLOGY_MARKER}(NAME) on the test, "
            "NAME a topology of `python -m discovery_harness topologies`",
            pytrace=False,
        )
    known = catalogue.load()
    try:
        topology = known.topology(marker.args[0])
    except KeyError:
        names = ", ".join(t.name for t in known.topologies)
        pytest.fail(f"{TOPOLOGY_MARKER}({marker.args[0]!r}): no such topology; known: {names}")
    return DeployedTopology(deploy(topology, **marker.kwargs))
