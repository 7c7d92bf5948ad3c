"""Workers forked from the pre-imported template are indistinguishable from fresh processes:
the same keys, cards and instance records in etcd (ids, ports and names aside), the same
answers over HTTP. The rest of the suite runs on the template, so this is what lets it."""

from __future__ import annotations

import os

import psutil
import pytest

from discovery_harness.deployment import whole_contract
from discovery_harness.deployment.fingerprint import (
    answer_fingerprint,
    differences,
    discovery_fingerprint,
)
from discovery_harness.plugin import topology_param
from discovery_harness.runtime.spawn import FRESH, ZYGOTE
from discovery_harness.serving.shapes import selected
from discovery_harness_scenarios.catalogue import AGGREGATED, CATALOGUE, MM_ENCODE_PD

# Nightly: each fresh worker imports the whole stack (~9 s of CPU), kept out of the README's run.
pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.nightly, pytest.mark.gpu_0]


@pytest.mark.parametrize(
    "topology",
    [topology_param(AGGREGATED), topology_param(MM_ENCODE_PD)],
)
def test_forked_workers_register_and_answer_like_fresh_ones(topology, deploy, worker_template):
    if worker_template is None:
        pytest.skip("no worker template in this run (--spawn fresh)")
    seen = {}
    for spawn in (FRESH, ZYGOTE):
        deployment = deploy(topology, spawn=spawn)
        replies = [deployment.send(kind) for kind in topology.requests]
        for worker in deployment.processes.workers:  # its own group, parent and ports
            process = psutil.Process(worker.pid)
            assert os.getpgid(worker.pid) == worker.pid
            # The template's pid is known from its start (its `info` only once its imports
            # are done, which the fresh deployment does not wait for).
            assert (process.ppid() == worker_template.pid) == (spawn == ZYGOTE)
            listening = {c.laddr.port for c in process.net_connections() if c.status == "LISTEN"}
            assert {worker.ports.system, worker.ports.tcp_rpc} <= listening
        state = deployment.discovery_now()
        seen[spawn] = {
            "etcd": discovery_fingerprint(
                state, deployment.plan.namespace, deployment.plan.model_name
            ),
            "http": [answer_fingerprint(r, deployment.plan.model_name) for r in replies],
        }
        deployment.verify()
    assert seen[FRESH]["etcd"], "nothing registered"
    assert differences(seen[FRESH], seen[ZYGOTE]) == []


@pytest.mark.multimodal
@pytest.mark.parametrize(
    "topology",
    [
        topology_param(t)
        for t in CATALOGUE
        if "multimodal" in t.marks and t.name != MM_ENCODE_PD.name  # compared above, fresh too
    ],
)
def test_each_multimodal_topology_passes_whole_from_fresh_workers(topology, deploy):
    """The plain start path of every multimodal mode (no template), its whole contract:
    the rest of the suite forks its workers."""
    deployment = deploy(topology, spawn=FRESH)
    for shape in selected(topology.requests, topology.shapes):
        deployment.send(shape.kind, shape=shape.name)
    assert deployment.advertised_addresses() == deployment.loopback_addresses()
    whole_contract.prove(deployment)
    deployment.verify()
