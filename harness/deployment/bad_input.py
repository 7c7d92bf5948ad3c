"""Bad input in a deployment: each malformed request of the endpoints its topology serves
(discovery_harness.serving.bad_input), then each kind's ordinary request once more, which must
still be served. The answers are judged with the rest of the verdict (judge/bad_input.py); the
workers' /health is watched throughout, so one that falls back to not ready after a bad input
is unready-after-ready."""

from __future__ import annotations

from discovery_harness.deployment.core import Deployment
from discovery_harness.serving.bad_input import SAME_PATH, for_kinds, send_bad
from discovery_harness.serving.requests import AFTER_BAD_INPUT


def prove(deployment: Deployment) -> None:
    """Send the topology's bad inputs, then recheck each kind they changed."""
    declared = deployment.plan.topology.requests
    bad_inputs = for_kinds(declared)
    for bad in bad_inputs:
        deployment.replies.append(send_bad(bad, deployment.client, deployment.plan.model_name))
    for family in dict.fromkeys(bad.kind for bad in bad_inputs):
        kind = next(k for k in declared if SAME_PATH.get(k, k) == family)
        deployment.send(kind, purpose=AFTER_BAD_INPUT)
