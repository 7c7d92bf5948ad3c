"""Self-tests of the bad-input rules (harness/serving/bad_input.py, judge/bad_input.py): a
worker that answers a size it cannot parse with a server error, or accepts it with 200, or
stops serving after it, is caught in the topology's one verdict, naming the role and the bad
input. The rule a worker cannot break on Dynamo 1.6.1 (a 4xx carries an error body: the
frontend writes it) is shown failing on hand-made answers in tests/test_bad_input.py. One
case runs by default (pre_merge); all of them with `-m selftest`."""

from __future__ import annotations

import pytest

from discovery_harness.deployment import whole_contract
from discovery_harness.model.violations import BAD_INPUT_ANSWER, ContractFailure
from discovery_harness.plugin import topology_param
from discovery_harness_scenarios.catalogue import IMAGE_DIFFUSION

pytestmark = [pytest.mark.selftest, pytest.mark.e2e, pytest.mark.sglang, pytest.mark.gpu_0]

ROLE = "image-diffusion"
REPRESENTATIVE = "bad-input-500"
# fault -> what the violation says
CASES = {
    "bad-input-500": "bad input image[unknown-size] to worker 'image-diffusion': answered 500",
    "bad-input-accepted": "bad input image[unknown-size] to worker 'image-diffusion': "
    "accepted with 200",
    "bad-input-poisons": "worker 'image-diffusion' stopped serving after bad input: its "
    "ordinary image request right after the bad inputs got 500",
}


def _cases() -> list[object]:
    cases = []
    for fault, says in CASES.items():
        mark = pytest.mark.pre_merge if fault == REPRESENTATIVE else pytest.mark.nightly
        param = topology_param(IMAGE_DIFFUSION, mark, pytest.mark.timeout(240))
        cases.append(pytest.param(fault, says, id=fault, marks=param.marks))
    return cases


@pytest.mark.parametrize(("fault", "says"), _cases())
def test_bad_input_answered_wrong_is_caught(fault, says, deploy):
    deployment = deploy(IMAGE_DIFFUSION, strict=True, faults={ROLE: fault})
    whole_contract.prove(deployment)
    with pytest.raises(ContractFailure) as failure:
        deployment.verify()
    found = failure.value.find(BAD_INPUT_ANSWER, ROLE)
    assert found, str(failure.value)
    assert any(says in v.message for v in found), str(failure.value)
    assert "the API promises a 4xx" in found[0].message or "stopped serving" in says
