"""Registration at runtime is held to the same contract as registration at start-up: a LoRA
loaded into running prefill and decode workers publishes one card per worker, of that
worker's role (a prefill worker's LoRA is never a public Chat model: Dynamo PR #8945), and
serves; unloading removes the cards and the listing, and nothing else changes."""

from __future__ import annotations

import pytest

from discovery_harness.deployment.fingerprint import differences, discovery_fingerprint
from discovery_harness.deployment.lora import LoraControl
from discovery_harness.plugin import parametrize_scenarios
from discovery_harness_scenarios.catalogue import LORA_P_D

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge]
LORA = "harness-lora"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """CPU tier: the packed layout with a generated adapter; GPU tier: each GPU layout with
    the catalogue's adapter (GPU_MODELS["lora"], fetched like the models)."""
    parametrize_scenarios(metafunc, (LORA_P_D,))


def test_lora_cards_come_with_load_and_go_with_unload(scenario, deploy):
    deployment = deploy(scenario)
    lora = LoraControl(deployment)
    before = discovery_fingerprint(
        deployment.discovery_now(), deployment.namespace, deployment.model_name
    )

    lora.load(LORA)
    lora.check_answers()
    lora.settle(LORA, loaded=True)
    assert LORA in deployment.listed_models()
    reply = deployment.send("chat", model=LORA)
    assert reply.ok, reply.describe()

    lora.unload(LORA)
    lora.check_answers()
    lora.settle(LORA, loaded=False)
    assert LORA not in deployment.listed_models()
    after = discovery_fingerprint(
        deployment.discovery_now(), deployment.namespace, deployment.model_name
    )
    assert differences(before, after) == []
    assert deployment.send("chat").ok
    deployment.verify()
