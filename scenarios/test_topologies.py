"""Every topology in the catalogue registers as its contract says and serves its requests.

On the CPU tier one item per topology (its packed layout); on the GPU tier one per layout
(`aggregated-1gpu`, `disaggregated-2gpu`, ...), marked gpu_N from the layout.
"""

from __future__ import annotations

import pytest

from harness.plugin import parametrize_scenarios
from scenarios.catalogue import CATALOGUE

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_scenarios(metafunc, CATALOGUE)


def test_registers_and_serves(scenario, deploy):
    deployment = deploy(scenario)
    deployment.send_shapes()  # the topology's request shapes, each once
    assert deployment.advertised_addresses() == deployment.loopback_addresses()
    deployment.verify()  # every answer judged; a release's declared findings set aside
