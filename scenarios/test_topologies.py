"""Every topology in the catalogue registers as its contract says and serves its requests,
and proves the rest of its contract in the same deployment (its runtime LoRA cycle, each
worker's canary): the one verdict the main job, `history` and `bisect` give.

On the CPU tier one item per topology (its packed layout); on the GPU tier one per layout
(`aggregated-1gpu`, `disaggregated-2gpu`, ...), marked gpu_N from the layout.
"""

from __future__ import annotations

import pytest

from discovery_harness.deployment import whole_contract
from discovery_harness.plugin import parametrize_scenarios
from discovery_harness.serving.shapes import selected
from discovery_harness_scenarios.catalogue import CATALOGUE

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge, pytest.mark.prestart]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_scenarios(metafunc, CATALOGUE)


def test_registers_and_serves(scenario, deploy):
    deployment = deploy(scenario)
    topology = scenario.topology
    for shape in selected(topology.requests, topology.shapes):  # each declared shape, once
        deployment.send(shape.kind, shape=shape.name)
    assert deployment.advertised_addresses() == deployment.loopback_addresses()
    whole_contract.prove(deployment)  # a LoRA topology's runtime cycle; every worker's canary
    deployment.verify()  # every answer judged; a release's declared findings set aside
