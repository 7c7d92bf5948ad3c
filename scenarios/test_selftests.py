"""Fault-injection self-tests: every check the harness claims is shown to fail on its fault.

Each test injects one fault (in the CPU launcher, or at the discovery level) and asserts that
the harness reports it with the right kind of violation, naming the right worker. Clean runs
raising no violation are shown by scenarios/test_topologies.py. Representative cases run by
default (pre_merge); the full matrix runs with `-m selftest` (and nightly).
"""

from __future__ import annotations

import dataclasses

import pytest
from packaging.version import Version

from discovery_harness.deployment import FILE, Planes
from discovery_harness.deployment.lora import LoraControl, runtime_cycle
from discovery_harness.discovery.faults import write_orphan_card
from discovery_harness.model.topology import GpuProfile, Placement, WorkerPlacement, WorkerSpec
from discovery_harness.model.violations import (
    BAD_RESPONSE,
    CARD_WITHOUT_INSTANCE,
    INCOMPATIBLE_WORKERS,
    INTERNAL_ADVERTISED,
    LISTED_EARLY,
    LORA_LEFT_BEHIND,
    LORA_REFUSED,
    LORA_WITHOUT_RUNTIME_DATA,
    METRICS_MODEL_LABEL,
    NEVER_LISTED,
    NEVER_READY,
    NEVER_REGISTERED,
    READY_BEFORE_CARD,
    READY_BUT_MUST_NOT,
    REGISTERED_UNEXPECTEDLY,
    STAND_IN_FAILED,
    STATUS_503,
    WORKER_EXITED,
    WRONG_CARD,
    ContractFailure,
)
from discovery_harness.plugin import role_param
from discovery_harness.runtime import dynamo_env
from discovery_harness.runtime.spawn import FRESH
from discovery_harness_scenarios.catalogue import (
    AGGREGATED,
    CATALOGUE,
    DISAGGREGATED,
    LORA_P_D,
    MM_ENCODE_PD,
    MULTINODE,
)

pytestmark = [pytest.mark.selftest, pytest.mark.e2e, pytest.mark.sglang, pytest.mark.gpu_0]

# The #4486 shape in its two most telling places, and a multi-node follower that registers;
# every other role runs with -m selftest (nightly).
# The frontend logs its routing decision (`Selected worker … worker_id=`) at INFO from 1.3 on
# (measured: 0.7.1-1.2.1 log the request's error lines, never the worker they routed to).
ROUTING_LOGGED = Version("1.3")
REPRESENTATIVE_CASES = {
    ("mm-encode-pd", "mm-worker"),
    ("multinode", "follower"),
}


def _role_cases(registering: bool) -> list[object]:
    """One case per worker of every topology the CPU tier runs: the workers that register
    (for skip-registration), or those that must not (for register-anyway)."""
    cases = []
    for topology in CATALOGUE:
        for worker in topology.workers:
            if worker.registers != registering:
                continue
            representative = (topology.name, worker.role) in REPRESENTATIVE_CASES
            cases.append(role_param(topology, worker.role, representative))
    return cases


def _deploy_and_verify(deploy, topology, **kwargs) -> ContractFailure:
    """Run the topology as a test would; return the failure the harness raised. Strict only
    with a fault (for the roles given one): with none, strict would fail a declared race of
    another role, such as 1.5-1.6's encoder ready a few ms before its card (finding 17)."""
    with pytest.raises(ContractFailure) as failure:
        deployment = deploy(topology, strict=bool(kwargs.get("faults")), **kwargs)
        for kind in topology.requests:
            deployment.send(kind)
        deployment.verify()
    return failure.value


def _only_message(failure: ContractFailure, kind: str, role: str | None = None) -> str:
    found = failure.find(kind, role)
    assert found, f"expected a {kind} violation for {role!r}, got:\n{failure}"
    return found[0].message


@pytest.mark.parametrize(("topology", "role"), _role_cases(registering=True))
def test_skipped_registration_is_caught_and_names_the_role(topology, role, deploy):
    failure = _deploy_and_verify(deploy, topology, faults={role: "skip-registration"})
    message = _only_message(failure, NEVER_REGISTERED, role)
    assert f"worker '{role}' (pid " in message
    assert "start path " + ", ".join(topology.worker(role).start_paths) in message
    assert "serving but without a model card" in message
    evidence = failure.find(NEVER_REGISTERED, role)[0].evidence
    assert "HARNESS-FAULT skip-registration" in evidence  # the log lines that matter
    assert f"worker '{role}' (pid " in evidence and ".log (" in evidence  # the log's path
    before_logs = str(failure).split("--- evidence ---")[0]
    assert len(before_logs.splitlines()) <= 25, before_logs  # pytest adds ~15: one screen
    assert {v.role for v in failure.find(NEVER_REGISTERED)} == {role}


@pytest.mark.parametrize(("topology", "role"), _role_cases(registering=False))
def test_a_worker_that_must_not_register_but_does_is_caught(topology, role, deploy):
    failure = _deploy_and_verify(deploy, topology, faults={role: "register-anyway"})
    message = _only_message(failure, REGISTERED_UNEXPECTEDLY, role)
    assert f"worker '{role}' (pid " in message and "must not register" in message
    assert "must not register, but it serves or registered: v1/" in message  # keys named


@pytest.mark.nightly
@pytest.mark.timeout(240)
@pytest.mark.multimodal
def test_the_0_7_1_shape_served_200_without_registration_is_still_caught(deploy):
    """Dynamo 0.7.1: encoder public with no topology, PD worker never registered; HTTP said 200."""
    failure = _deploy_and_verify(
        deploy,
        MM_ENCODE_PD,
        faults={"mm-encoder": "no-topology", "mm-worker": "skip-registration"},
    )
    assert "worker 'mm-worker'" in _only_message(failure, NEVER_REGISTERED, "mm-worker")
    assert "'mm-worker'" in _only_message(failure, LISTED_EARLY)


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_model_listed_before_its_worker_can_serve_is_caught_with_the_frontends_log(deploy):
    """The worker registers, then refuses its first requests as unable to serve yet: every
    peer is registered, but the listed model answers 503. The message quotes the frontend."""
    failure = _deploy_and_verify(
        deploy, AGGREGATED, faults={"worker": "unready-after-registration"}
    )
    message = _only_message(failure, LISTED_EARLY)
    assert "request(s) for the listed model got 503" in message
    assert "the frontend's log meanwhile" in message and "status=503" in message
    assert "\x1b[" not in message  # the frontend's colour codes stripped
    # The last refused request's own lines, by its id, under the message.
    evidence = failure.find(LISTED_EARLY)[0].evidence
    assert "-> 503" in evidence and "(x-request-id harness-" in evidence, evidence


@pytest.mark.pre_merge
@pytest.mark.timeout(240)
def test_503_after_readiness_fails_with_the_503_listed(deploy):
    with pytest.raises(ContractFailure) as failure:
        deployment = deploy(AGGREGATED, strict=True)
        assert deployment.send("chat").ok
        deployment.kill("worker")  # SIGKILL: its keys outlive it until the lease expires
        deployment.send("chat")
        deployment.verify()
    message = _only_message(failure.value, STATUS_503)
    assert "POST /v1/chat/completions -> 503" in message
    # The cause beside the answer: the frontend's own lines for that request, by its id.
    evidence = failure.value.find(STATUS_503)[0].evidence
    assert "-> 503" in evidence and "(x-request-id harness-" in evidence
    assert "the frontend's lines for this request:\n    | " in evidence


@pytest.mark.pre_merge
@pytest.mark.timeout(240)
def test_a_503_outside_its_known_window_fails(deploy):
    """disaggregated declares a 503 known on 1.6.1 only within its window after a restarted
    prefill worker is listed again (finding 8); any other 503 fails the verdict, strict or
    not."""
    assert any(k.kind == STATUS_503 and k.window for k in DISAGGREGATED.known_violations)
    with pytest.raises(ContractFailure) as failure:
        deployment = deploy(DISAGGREGATED)
        assert deployment.send("chat").ok
        deployment.kill("decode")  # SIGKILL: its keys outlive it until the lease expires
        deployment.send("chat")
        deployment.verify()
    message = _only_message(failure.value, STATUS_503)
    assert "POST /v1/chat/completions -> 503" in message
    assert not deployment.known_seen


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_wrong_worker_type_is_caught(deploy):
    failure = _deploy_and_verify(deploy, AGGREGATED, faults={"worker": "wrong-worker-type"})
    message = _only_message(failure, WRONG_CARD, "worker")
    assert "worker_type 'decode', expected 'aggregated'" in message


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_exit_right_after_registering_is_caught(deploy):
    failure = _deploy_and_verify(deploy, AGGREGATED, faults={"worker": "exit-after-registration"})
    assert "exited with code 17" in _only_message(failure, WORKER_EXITED, "worker")


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_handler_error_is_caught_as_an_error_for_a_listed_model(deploy):
    failure = _deploy_and_verify(deploy, AGGREGATED, faults={"worker": "handler-error"})
    assert "-> 500" in _only_message(failure, BAD_RESPONSE)
    # Never served at readiness: the last refused probe's cause, from both sides.
    evidence = failure.find(BAD_RESPONSE)[0].evidence
    assert "served by worker 'worker' (pid " in evidence
    assert "RuntimeError: injected handler fault" in evidence


@pytest.mark.pre_merge
@pytest.mark.timeout(240)
def test_a_failed_answer_carries_its_cause_from_the_frontend_and_the_serving_worker(deploy):
    """A handler that fails only on real requests (its canary succeeds, the worker stays
    ready): the failure shows the frontend's error line for that request, the worker it
    routed to by role and pid, and that worker's traceback; the violation's line stays short."""
    # As the run's release deploys it (with --dynamo-env, an older release's era), its
    # known violations aside: only the answer's evidence is judged here.
    release = dynamo_env.active().version
    topology = AGGREGATED.for_release(release)
    with pytest.raises(ContractFailure) as raised:
        deployment = deploy(topology, faults={"worker": "request-error"})
        deployment.send("chat")
        deployment.verify()
    (violation,) = raised.value.find(BAD_RESPONSE)
    assert "-> 500" in violation.message and "Traceback" not in violation.message
    evidence = violation.evidence
    assert "x-request-id harness-" in evidence
    assert "the frontend's lines for this request" in evidence
    assert "ERROR" in evidence.split("served by")[0]  # the frontend's own error line
    who = f"worker '{topology.workers[0].role}' (pid "
    if Version(release) >= ROUTING_LOGGED:
        assert f"served by {who}" in evidence, evidence
    else:  # measured on 0.7.1-1.2.1: no routing line at INFO; the worker with errors then
        assert f"{who}" in evidence and "logged errors near the request" in evidence, evidence
    assert "Traceback (most recent call last)" in evidence
    assert "RuntimeError: injected fault on a real request" in evidence
    assert "full logs: frontend " in evidence


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_registration_later_than_the_deadline_is_never_registered(deploy):
    failure = _deploy_and_verify(
        deploy, AGGREGATED, faults={"worker": "delayed-registration"}, fault_delay_s=900
    )
    evidence = failure.find(NEVER_REGISTERED, "worker")[0].evidence
    assert "HARNESS-FAULT delayed-registration" in evidence


@pytest.mark.nightly
@pytest.mark.timeout(240)
@pytest.mark.multimodal
def test_internal_worker_advertising_a_public_model_is_caught(deploy):
    failure = _deploy_and_verify(deploy, MM_ENCODE_PD, faults={"mm-worker": "advertise-internal"})
    assert "is internal but registered" in _only_message(failure, INTERNAL_ADVERTISED, "mm-worker")


@pytest.mark.nightly
@pytest.mark.timeout(240)
@pytest.mark.multimodal
def test_public_model_never_listed_is_caught(deploy):
    """PD worker registered as decode: the encoder's needs are never met."""
    failure = _deploy_and_verify(deploy, MM_ENCODE_PD, faults={"mm-worker": "wrong-worker-type"})
    assert "never appeared in GET /v1/models" in _only_message(failure, NEVER_LISTED)
    _only_message(failure, WRONG_CARD, "mm-worker")


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_card_without_instance_is_caught(deploy, discovery_observer):
    with pytest.raises(ContractFailure) as failure:
        deployment = deploy(AGGREGATED, strict=True)
        orphan = write_orphan_card(discovery_observer, deployment.card("worker"))
        deployment.verify()
    assert orphan in _only_message(failure.value, CARD_WITHOUT_INSTANCE)


# Two aggregated workers serving one model name with different KV block sizes: their cards
# differ in checksum, and the frontend refuses the second.
_MISMATCHED_PAIR = dataclasses.replace(
    AGGREGATED,
    name="aggregated-mismatched",
    workers=(
        AGGREGATED.workers[0],
        WorkerSpec(
            role="worker-page-32",
            flags=("--page-size", "32"),
            model="text",
            component="backend",
            card=AGGREGATED.workers[0].card,
        ),
    ),
    gpu=GpuProfile(
        placements=(
            Placement(
                gpus=1,
                workers=(
                    WorkerPlacement(role="worker", gpu=0),
                    WorkerPlacement(role="worker-page-32", gpu=0),
                ),
            ),
        )
    ),
)


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_incompatible_workers_are_caught(deploy):
    failure = _deploy_and_verify(deploy, _MISMATCHED_PAIR)
    assert "Rejected incompatible workers" in _only_message(failure, INCOMPATIBLE_WORKERS)


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_lora_on_a_prefill_worker_registered_as_chat_is_caught(deploy):
    """The shape Dynamo PR #8945 fixed (a prefill worker's LoRA as a public Chat model):
    1.6.1 itself refuses it ("lifecycle role is already Prefill"), so the LoRA never
    registers on that worker, which the harness reports with the worker's answer."""
    # Not strict: 1.6.1's known LoRA-card gap (finding 19) is not what this test is about.
    deployment = deploy(LORA_P_D, faults={"prefill": "lora-as-chat"})
    lora = LoraControl(deployment)
    lora.load("harness-lora")
    with pytest.raises(ContractFailure) as refused:
        lora.check_answers()
    answer = _only_message(refused.value, LORA_REFUSED, "prefill")
    assert "refused load_lora harness-lora: Dynamo answered 500" in answer
    assert "start path init_prefill" in answer
    # The worker's side of the refusal: its error lines while it answered, and its log.
    evidence = refused.value.find(LORA_REFUSED, "prefill")[0].evidence
    assert "(pid " in evidence and "its errors while answering load_lora" in evidence
    assert "already Prefill" in evidence and "full log: " in evidence, evidence
    with pytest.raises(ContractFailure) as failure:
        lora.settle("harness-lora", loaded=True)
    message = _only_message(failure.value, NEVER_REGISTERED, "prefill")
    assert "no LoRA card appeared" in message
    assert "load_lora harness-lora on 'prefill' -> 500" in message
    assert not failure.value.find(NEVER_REGISTERED, "decode")


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_lora_card_left_after_unload_is_caught(deploy):
    """Through the cycle lora-p-d's own verdict runs (the main job judges it)."""
    deployment = deploy(LORA_P_D, faults={"decode": "lora-card-stays"})  # finding 19 aside
    with pytest.raises(ContractFailure) as failure:
        runtime_cycle(deployment)
    message = _only_message(failure.value, REGISTERED_UNEXPECTEDLY, "decode")
    assert "still has a card for LoRA 'harness-lora' after unload_lora" in message
    assert not failure.value.find(REGISTERED_UNEXPECTEDLY, "prefill")


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_stand_in_that_breaks_a_lora_update_is_the_harnesss_failure(deploy):
    """The harness's own stand-in failing where Dynamo calls it is reported as a harness
    error pointing at the stand-in, never as Dynamo's lora-refused."""
    deployment = deploy(LORA_P_D, faults={"decode": "stand-in-lora-broken"})
    with pytest.raises(ContractFailure) as failure:
        runtime_cycle(deployment)
    assert not failure.value.find(LORA_REFUSED, "decode")
    message = _only_message(failure.value, STAND_IN_FAILED, "decode")
    assert message.startswith("harness error, not Dynamo's: the CPU stand-in CpuScheduler")
    assert "python -m discovery_harness_workers.drift" in message


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_an_unload_that_takes_the_base_card_with_it_is_caught(deploy):
    deployment = deploy(LORA_P_D, faults={"decode": "lora-unload-drops-base"})
    with pytest.raises(ContractFailure) as failure:
        runtime_cycle(deployment)
    message = _only_message(failure.value, LORA_LEFT_BEHIND)
    assert "discovery is not as it was before LoRA 'harness-lora' was loaded" in message
    assert "only in the first" in message


@pytest.mark.nightly
@pytest.mark.timeout(240)
@pytest.mark.multimodal
def test_a_declared_request_answered_400_fails_the_verdict(deploy):
    """A text chat to the encode worker's model answers 400 ("multi_modal_data is
    required"): declared as a request of the topology, it fails the verdict itself."""
    text_too = dataclasses.replace(
        MM_ENCODE_PD, name="mm-encode-pd-text", requests=(*MM_ENCODE_PD.requests, "chat")
    )
    failure = _deploy_and_verify(deploy, text_too)
    assert "-> 400" in _only_message(failure, BAD_RESPONSE)


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_missing_card_is_caught_on_the_file_discovery_backend(deploy):
    """The observer reads Dynamo's file store the way it reads etcd: #4486 is caught there
    too."""
    failure = _deploy_and_verify(
        deploy,
        AGGREGATED,
        faults={"worker": "skip-registration"},
        planes=Planes(discovery=FILE),
        spawn=FRESH,
    )
    message = _only_message(failure, NEVER_REGISTERED, "worker")
    assert "serving but without a model card" in message


# The readiness contract (a worker's /health, the probe Kubernetes reads): each way to break it.
@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_worker_that_never_says_ready_is_caught(deploy):
    failure = _deploy_and_verify(deploy, AGGREGATED, faults={"worker": "never-ready"})
    message = _only_message(failure, NEVER_READY, "worker")
    assert "worker 'worker' (pid " in message and "start path init_decode" in message
    assert "never said ready on /health" in message
    assert "HTTP 503" in message and "generate ready" in message  # what /health said
    assert "its card v1/mdc/" in message  # registered all the same
    assert "HARNESS-FAULT never-ready" in failure.find(NEVER_READY, "worker")[0].evidence


@pytest.mark.pre_merge
@pytest.mark.timeout(240)
@pytest.mark.multimodal
def test_a_worker_ready_before_its_card_is_caught_with_the_window(deploy):
    failure = _deploy_and_verify(
        deploy, MM_ENCODE_PD, faults={"mm-worker": "ready-before-card"}, fault_delay_s=2.5
    )
    message = _only_message(failure, READY_BEFORE_CARD, "mm-worker")
    assert "worker 'mm-worker' (pid " in message and "init_multimodal_worker" in message
    window = float(message.split("said ready on /health ")[1].split(" s before")[0])
    assert 0.5 < window <= 2.6, message  # the delay, less what the worker took to be ready
    assert "none of them its own" in message and "v1/mdc/" in message


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_follower_that_says_ready_is_caught(deploy):
    """The multi-node follower's contract (measured on 1.6.1): 503 notready for life. One
    that takes the leader's path serves and says ready: caught beside its registration."""
    failure = _deploy_and_verify(deploy, MULTINODE, faults={"follower": "register-anyway"})
    message = _only_message(failure, READY_BUT_MUST_NOT, "follower")
    assert "must never be ready" in message and "worker 'follower' (pid " in message


# A worker's self-description (its metrics' model label, its LoRA cards' runtime data).
@pytest.mark.pre_merge
@pytest.mark.timeout(240)
def test_metrics_labelled_with_another_model_are_caught(deploy):
    """The upstream #8035 shape: the worker's series are labelled with its model path while
    its card names the served model."""
    failure = _deploy_and_verify(deploy, AGGREGATED, faults={"worker": "metrics-label"})
    message = _only_message(failure, METRICS_MODEL_LABEL, "worker")
    assert "worker 'worker' (pid " in message and "start path init_decode" in message
    assert "expected: model='aggregated-" in message and "/metrics" in message
    assert "seen:     model='/" in message and "dynamo_component_" in message  # the path
    evidence = failure.find(METRICS_MODEL_LABEL, "worker")[0].evidence
    assert "HARNESS-FAULT metrics-label" in evidence
    assert {v.kind for v in failure.violations} == {METRICS_MODEL_LABEL}


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_lora_card_without_runtime_data_is_caught(deploy):
    """The upstream #14862 shape: load_lora publishes the adapter's card without the base
    card's runtime config. Not strict: 1.6.1's own gap (finding 19: sglang_generate only) is
    set aside on the prefill worker, and does not excuse the decode worker's bare card."""
    deployment = deploy(LORA_P_D, faults={"decode": "lora-card-bare"})
    lora = LoraControl(deployment)
    lora.load("harness-lora")
    lora.check_answers()
    lora.settle("harness-lora", loaded=True)
    with pytest.raises(ContractFailure) as failure:
        deployment.verify()
    message = _only_message(failure.value, LORA_WITHOUT_RUNTIME_DATA, "decode")
    assert "worker 'decode' (pid " in message and "start path init_decode" in message
    assert "/harness-lora without its base card's runtime data" in message
    assert "runtime_data lacks ['disagg_prefill_cancel_anytime_v1', 'sglang_generate'" in message
    evidence = failure.value.find(LORA_WITHOUT_RUNTIME_DATA, "decode")[0].evidence
    assert "HARNESS-FAULT lora-card-bare" in evidence
    assert not failure.value.find(LORA_WITHOUT_RUNTIME_DATA, "prefill")
    assert [v.role for v, _ in deployment.known_seen] == ["prefill"]
