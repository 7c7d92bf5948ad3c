"""Registration at runtime is held to the same contract as registration at start-up: a LoRA
loaded into running prefill and decode workers publishes one card per worker, of that
worker's role (a prefill worker's LoRA is never a public Chat model: Dynamo PR #8945), and
serves; unloading removes the cards and the listing, and nothing else changes."""

from __future__ import annotations

import pytest

from harness.deployment.fingerprint import differences, discovery_fingerprint
from harness.deployment.lora import LoraControl
from harness.plugin import topology_param
from scenarios.catalogue import LORA_P_D

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge, pytest.mark.gpu_0]
LORA = "harness-lora"


@pytest.mark.parametrize("topology", [topology_param(LORA_P_D)])
def test_lora_cards_come_with_load_and_go_with_unload(topology, deploy):
    deployment = deploy(topology)
    lora = LoraControl(deployment)
    before = discovery_fingerprint(
        deployment.discovery_now(), deployment.namespace, deployment.model_name
    )

    assert all(answer.ok for answer in lora.load(LORA)), lora.answers
    lora.settle(LORA, loaded=True)
    assert LORA in deployment.listed_models()
    reply = deployment.send("chat", model=LORA)
    assert reply.ok, reply.describe()

    assert all(answer.ok for answer in lora.unload(LORA)), lora.answers
    lora.settle(LORA, loaded=False)
    assert LORA not in deployment.listed_models()
    after = discovery_fingerprint(
        deployment.discovery_now(), deployment.namespace, deployment.model_name
    )
    assert differences(before, after) == []
    assert deployment.send("chat").ok
    deployment.verify()
