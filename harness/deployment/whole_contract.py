"""What a topology's one verdict proves after its declared answers: the parts of the contract
that need the deployment to act or to wait, so that the main job (`conformance`), `history`
and `bisect` judge everything that applies to a topology in one deployment.

- Bad input to every endpoint it serves (bad_input.prove): each answered 4xx, and the kind
  still served right after.
- A topology that carries a LoRA asset: the runtime cycle (lora.runtime_cycle).
- Where the release runs the canary (its era's readiness settings): every worker whose mode
  builds a payload has had one come back from its own handler (a count read from its log,
  not a sleep); the verdict then requires it (canary-never-ran) and judges it
  (canary-rejected).

Cards, answers, /health, the frontend's /ready and /health and the self-description are
judged by the verdict itself (Deployment.verify).
"""

from __future__ import annotations

from discovery_harness.deployment import bad_input, lora
from discovery_harness.deployment.canary import await_canaries
from discovery_harness.deployment.core import Deployment
from discovery_harness.serving.requests import BAD_INPUT, LORA_CYCLE

LORA_ASSET = "lora"
# The parts of the contract a verdict may or may not have judged (the history's columns).
READINESS, CANARY, LORA, BAD_INPUT_PART = "readiness", "canary", "lora", "bad_input"


def prove(deployment: Deployment) -> None:
    """Send its bad inputs, run the topology's runtime cycle, then wait for every canary its
    workers owe."""
    topology = deployment.plan.topology
    if deployment.client.ready:  # else its model is known never to be listed: nothing to ask
        bad_input.prove(deployment)
        if LORA_ASSET in topology.assets:
            lora.runtime_cycle(deployment)
    if topology.health_judged:
        await_canaries(deployment.processes.workers, deployment.canary_waited)


def judged(deployment: Deployment) -> dict[str, bool]:
    """Which parts its verdict judged: readiness where its era runs the settings, the canary
    there once it was ready, the LoRA cycle and bad input where their requests went out."""
    purposes = {r.purpose for r in deployment.replies}
    health = deployment.plan.topology.health_judged
    return {
        READINESS: health,
        CANARY: health and deployment.client.ready,
        LORA: LORA_CYCLE in purposes,
        BAD_INPUT_PART: BAD_INPUT in purposes,
    }
