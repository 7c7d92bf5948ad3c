"""Self-tests of the canary check: a worker whose handler rejects its own health-check
payload (upstream #14680: the embedding canary shaped for generate) and a worker whose mode
hands the runtime no payload (the multimodal workers before #4512) each fail their topology,
naming the role, the payload its mode builds and, for a rejection, the handler's error."""

from __future__ import annotations

import pytest

from discovery_harness.deployment.canary import await_canaries
from discovery_harness.judge.canary import payload_for
from discovery_harness.model.violations import CANARY_NEVER_RAN, CANARY_REJECTED, ContractFailure
from discovery_harness.plugin import role_param
from discovery_harness_scenarios.catalogue import CATALOGUE, EMBEDDING_TOPOLOGY

pytestmark = [pytest.mark.selftest, pytest.mark.e2e, pytest.mark.sglang, pytest.mark.gpu_0]

# The #14680 mode itself runs by default; every other role with a payload with -m selftest.
REPRESENTATIVE = {("embedding", "embedding")}


def _canary_cases() -> list[object]:
    """One case per worker whose mode builds a canary payload, in every CPU topology."""
    cases = []
    for topology in CATALOGUE:
        for worker in topology.workers:
            if worker.card is None and not worker.internal_endpoint:
                continue
            if payload_for(worker.start_paths, worker.flags) is None:
                continue
            representative = (topology.name, worker.role) in REPRESENTATIVE
            cases.append(role_param(topology, worker.role, representative))
    return cases


def _deploy_and_await(deploy, topology, fault: dict[str, str]) -> ContractFailure:
    with pytest.raises(ContractFailure) as failure:
        deployment = deploy(topology, strict=True, faults=fault)
        await_canaries(deployment.processes.workers, deployment.canary_waited)
        deployment.verify()
    return failure.value


@pytest.mark.parametrize(("topology", "role"), _canary_cases())
def test_a_canary_its_handler_rejects_is_caught(topology, role, deploy):
    failure = _deploy_and_await(deploy, topology, {role: "canary-rejected"})
    found = failure.find(CANARY_REJECTED, role)
    assert found, f"expected {CANARY_REJECTED} for {role!r}, got:\n{failure}"
    message, evidence = found[0].message, found[0].evidence
    spec = topology.worker(role)
    payload = payload_for(spec.start_paths, spec.flags)
    assert payload is not None
    assert f"worker '{role}' (pid " in message
    assert "start path " + ", ".join(spec.start_paths) in message
    assert payload.describe() in message  # the payload class its mode builds, and its keys
    assert '  error:    "' in message and '  error:    ""' not in message  # the handler's
    assert "Health check" in evidence and "for generate" in evidence  # the runtime's lines
    assert f"worker '{role}' (pid " in evidence and ".log (" in evidence  # the log's path
    others = {v.role for v in failure.find(CANARY_REJECTED)} - {role}
    declared = any(k.kind == CANARY_REJECTED for k in topology.known_violations)
    assert not others or declared, others  # peers only where 1.6.1's own canary fails


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_mode_without_a_canary_payload_is_caught(deploy):
    failure = _deploy_and_await(deploy, EMBEDDING_TOPOLOGY, {"embedding": "canary-dropped"})
    found = failure.find(CANARY_NEVER_RAN, "embedding")
    assert found, f"expected {CANARY_NEVER_RAN}, got:\n{failure}"
    message = found[0].message
    assert "worker 'embedding' (pid " in message and "no health check reached" in message
    assert "SglangEmbeddingHealthCheckPayload" in message and "waited:" in message
