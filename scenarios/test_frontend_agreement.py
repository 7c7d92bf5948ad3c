"""Self-tests of the frontend-readiness checks against the real frontend: a disagreement
between `GET /v1/models/{m}/ready` and etcd, provoked at the etcd level, is caught with both
sides shown.

Dynamo 1.6.1's frontend keeps the card it first read for an instance: a card rewritten in place
(same key and lease, other `needs`) changes what etcd says the topology needs but not what the
frontend answers (measured). That is the one way found to make the real frontend disagree in
each direction. A /health that lags etcd or a `missing_worker_types` that omits a missing
role could not be provoked (the frontend follows every instance put and delete); the judge's
unit tests prove those on recorded answers (tests/test_frontend_readiness.py).
"""

from __future__ import annotations

import signal

import pytest

from discovery_harness.common.deadline import Deadline
from discovery_harness.discovery.faults import rewrite_card_needs
from discovery_harness.model.violations import FRONTEND_READINESS_DISAGREES, ContractFailure
from discovery_harness.plugin import topology_param
from discovery_harness_scenarios.catalogue import AGGREGATED, DISAGGREGATED

pytestmark = [pytest.mark.selftest, pytest.mark.e2e, pytest.mark.sglang, pytest.mark.gpu_0]

# The frontend answers within ~0.1 s on the CPU tier; a self-test need not wait the full
# agreement deadline to show the disagreement outlives it.
WITHIN_S = 1.0


def _disagreement(failure: ContractFailure) -> str:
    found = failure.find(FRONTEND_READINESS_DISAGREES)
    assert found, f"expected a {FRONTEND_READINESS_DISAGREES} violation, got:\n{failure}"
    return found[0].message


@pytest.mark.pre_merge
@pytest.mark.timeout(240)
@pytest.mark.parametrize("topology", [topology_param(AGGREGATED)])
def test_ready_while_etcd_says_a_needed_role_is_missing_is_caught(
    topology, deploy, discovery_observer
):
    with pytest.raises(ContractFailure) as failure:
        deployment = deploy(topology, strict=True)
        key, _ = rewrite_card_needs(discovery_observer, deployment.card("worker"), [["prefill"]])
        deployment.frontend_agreement.check("after the card was rewritten", within_s=WITHIN_S)
        deployment.verify()
    message = _disagreement(failure.value)
    assert failure.value.find(FRONTEND_READINESS_DISAGREES, "worker"), failure.value
    assert "after the card was rewritten" in message
    assert "prefill needed by 'worker'" in message
    assert "says ready while etcd lacks prefill" in message
    assert "aggregated 1 live (needs prefill)" in message and key in message
    assert '"ready":true' in message and '"missing_worker_types":[]' in message


@pytest.mark.nightly
@pytest.mark.timeout(240)
@pytest.mark.parametrize("topology", [topology_param(DISAGGREGATED)])
def test_not_ready_while_etcd_meets_every_need_is_caught(topology, deploy, discovery_observer):
    """Prefill stopped and gone from etcd, decode's card rewritten to need nothing: etcd's
    cards say the topology can serve; the frontend still wants prefill."""
    with pytest.raises(ContractFailure) as failure:
        deployment = deploy(topology, strict=True)
        prefill = deployment.records(deployment.discovery_now(), deployment.worker("prefill"))
        deployment.kill("prefill", signal.SIGTERM)
        gone = discovery_observer.wait_for(
            lambda state: not any(k in state.raw for k in prefill.all_keys()), Deadline(30)
        )
        assert gone, "the stopped prefill worker's keys stayed in etcd"
        rewrite_card_needs(discovery_observer, deployment.card("decode"), [])
        deployment.frontend_agreement.check("prefill gone, decode's card rewritten", within_s=1)
        deployment.verify()
    message = _disagreement(failure.value)
    assert "says not ready" in message and "etcd meets every need" in message
    assert "decode 1 live (needs nothing)" in message
    assert '"missing_worker_types":["prefill"]' in message
