"""What the request path of sglang itself promises, asked as a client asks it: the official
`openai` client against a deployment. On the CPU tier only the scheduler is stood in for, so
`n` samples and logprobs come back through sglang's real TokenizerManager (its fan-out of
`n`, its logprob assembly) and Dynamo's handlers; on the GPU tier from real engines."""

from __future__ import annotations

import openai
import pytest

from discovery_harness.plugin import topology_param
from discovery_harness_scenarios.catalogue import AGGREGATED

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge, pytest.mark.gpu_0]

TOP = 3


def _client(deployment) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{deployment.plan.base_url}/v1", api_key="unused", max_retries=0, timeout=60
    )


@pytest.mark.parametrize("topology", [topology_param(AGGREGATED)])
def test_n_samples_and_logprobs_come_back_as_asked(topology, deploy):
    deployment = deploy(topology)
    answer = _client(deployment).chat.completions.create(
        model=deployment.plan.model_name,
        messages=[{"role": "user", "content": "Say hello."}],
        n=2,
        max_tokens=8,
        logprobs=True,
        top_logprobs=TOP,
    )
    assert sorted(choice.index for choice in answer.choices) == [0, 1], answer
    for choice in answer.choices:
        assert choice.logprobs is not None and choice.logprobs.content, choice
        for position in choice.logprobs.content:
            ranked = [candidate.logprob for candidate in position.top_logprobs]
            assert len(ranked) == TOP, position
            assert ranked == sorted(ranked, reverse=True) and ranked[0] <= 0, position
            assert position.logprob <= 0, position
    deployment.verify()  # and no 503 (or other failure) since readiness


@pytest.mark.judges("model-numerics")
@pytest.mark.parametrize("topology", [topology_param(AGGREGATED)])
def test_a_seed_repeats_a_sampled_answer(topology, deploy):
    """Sampled at temperature 1, the same seed gives the same text (the CPU tier's stand-in
    model is deterministic whatever the seed, so there it would prove nothing: skipped)."""
    deployment = deploy(topology)
    client = _client(deployment)

    def sampled() -> str | None:
        answer = client.chat.completions.create(
            model=deployment.plan.model_name,
            messages=[{"role": "user", "content": "Tell me a story."}],
            temperature=1.0,
            seed=1234,
            max_tokens=16,
        )
        return answer.choices[0].message.content

    assert sampled() == sampled()
    deployment.verify()
