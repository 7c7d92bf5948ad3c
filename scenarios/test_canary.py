"""The health canary in every mode: each worker's own `health_check_payload` reaches its own
handler and succeeds.

Workers run with the canary on (DYN_HEALTH_CHECK_ENABLED, as a failover deployment runs its
engines). The runtime sends a canary only after DYN_CANARY_WAIT_TIME of idleness (whole
seconds in 1.6.1), so proving it costs a second or more per deployment: one scenario per
topology waits for it here, while every other scenario judges the canaries that happened to
run (a rejected one fails wherever it shows). See docs/checks.md, "The health canary".
"""

from __future__ import annotations

import dataclasses

import pytest

from discovery_harness.deployment.canary import await_canaries, payload_of
from discovery_harness.plugin import parametrize_scenarios
from discovery_harness_scenarios.catalogue import CATALOGUE

pytestmark = [pytest.mark.e2e, pytest.mark.sglang]

# Run by default (each waits ~1.5 s on the CPU tier): the #14680 mode (embedding), the
# disaggregated payloads (prefill and decode), and the multimodal workers with a dedicated
# encoder (three roles, the encoder without a payload, and 1.6.1's refused canaries: finding
# 15). The other topologies run with -m nightly.
REPRESENTATIVE = ("embedding", "disaggregated", "mm-encode-p-d")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    scheduled = tuple(
        dataclasses.replace(
            topology,
            marks=(*topology.marks, "pre_merge" if topology.name in REPRESENTATIVE else "nightly"),
        )
        for topology in CATALOGUE
    )
    parametrize_scenarios(metafunc, scheduled)


def test_canary_reaches_its_handler(scenario, deploy):
    deployment = deploy(scenario)
    logs = await_canaries(deployment.workers, deployment.canary_waited)
    deployment.verify()  # canary-never-ran / canary-rejected (a release's known set aside)
    expected = {w.role for w in deployment.workers if payload_of(w) is not None}
    assert set(logs) == expected
    assert all(log.reached >= 1 for log in logs.values()), logs
