"""The edges where registration bugs have lived: a worker lost and restarted (#12566: a
restarted worker the frontend never routes to), a frontend that starts late or restarts.
Measured figures go into each test's report (JUnit properties)."""

from __future__ import annotations

import dataclasses
import signal

import pytest

from discovery_harness.deployment.disruption import come_back, depart
from discovery_harness.model.violations import INCOMPATIBLE_WORKERS, INTERFERENCE, ContractFailure
from discovery_harness.plugin import topology_param
from discovery_harness_scenarios.catalogue import AGGREGATED, DISAGGREGATED, MM_ENCODE_PD

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.pre_merge, pytest.mark.gpu_0]
# Stops wait out Dynamo's 5 s shutdown grace and the frontend's unlisting (~8 s): nightly.
LONG = pytest.mark.nightly

SIGTERM_BOUND_S = 2.0  # keys and listing gone after a graceful stop
LEASE_TTL_S = 3  # set by the harness for the SIGKILL case (Dynamo's default is 30 s)
LEASE_MARGIN_S = 2.0


_STOPPED_ROLES = [
    pytest.param(
        AGGREGATED, "worker", id="aggregated-worker", marks=topology_param(AGGREGATED).marks
    ),
    # A 503 right after the restarted prefill worker is listed again is a known violation of
    # 1.6.1 inside the window the catalogue declares (measured, cited: finding 8); outside it
    # the verdict fails.
    pytest.param(
        DISAGGREGATED,
        "prefill",
        id="disaggregated-prefill",
        marks=topology_param(DISAGGREGATED).marks,
    ),
]


@LONG
@pytest.mark.parametrize(("topology", "role"), _STOPPED_ROLES)
def test_sigterm_takes_the_worker_out_of_routing_and_a_restart_serves_again(
    topology, role, deploy, record_property
):
    deployment = deploy(topology)
    gone = depart(deployment, role, signal.SIGTERM, within_s=15)
    record_property("sigterm", gone.describe())
    assert gone.generate_gone_s is not None, gone.describe()
    assert gone.generate_gone_s <= SIGTERM_BOUND_S, gone.describe()
    back = come_back(deployment, role, within_s=30)
    record_property("restart", back.describe())
    assert back.registered_s is not None and back.listed_s is not None, back.describe()
    # Every answer since readiness, the restart's included: a 503 fails unless the catalogue
    # declares it known inside a measured window after the model was listed again.
    deployment.verify()  # a known one goes to the report (the deploy fixture records it)
    assert all(reply.ok or reply.status == 503 for reply in back.replies), back.describe()


@LONG
@pytest.mark.xfail(
    strict=True,
    reason="Dynamo 1.6.1 on SIGTERM: the generate instance goes at once (0.03 s), but the "
    "model card and the other endpoints' instances stay for the graceful-shutdown grace "
    "(DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS, 5 s) and the frontend unlists the model ~3 s "
    "after that (~8 s in all): meanwhile the model is listed and answers 503, then 404",
)
@pytest.mark.parametrize("topology", [topology_param(AGGREGATED)])
def test_sigterm_removes_card_and_listing_within_two_seconds(topology, deploy, record_property):
    deployment = deploy(topology)
    gone = depart(deployment, "worker", signal.SIGTERM, within_s=15)
    record_property("sigterm", gone.describe())
    assert gone.keys_gone_s is not None and gone.keys_gone_s <= SIGTERM_BOUND_S, gone.describe()
    assert gone.unlisted_s is not None and gone.unlisted_s <= SIGTERM_BOUND_S, gone.describe()


@LONG
@pytest.mark.parametrize("topology", [topology_param(AGGREGATED)])
def test_sigkill_deregisters_when_the_lease_expires(topology, deploy, record_property):
    deployment = deploy(topology, env={"ETCD_LEASE_TTL": str(LEASE_TTL_S)})
    gone = depart(deployment, "worker", signal.SIGKILL, within_s=LEASE_TTL_S * 4)
    record_property("sigkill", gone.describe())
    bound = LEASE_TTL_S + LEASE_MARGIN_S
    assert gone.keys_gone_s is not None and gone.keys_gone_s <= bound, gone.describe()
    back = come_back(deployment, "worker", within_s=30)
    record_property("restart", back.describe())
    assert all(reply.ok for reply in back.replies), back.describe()
    deployment.verify()


@pytest.mark.parametrize(
    "topology", [topology_param(AGGREGATED), topology_param(MM_ENCODE_PD, LONG)]
)
def test_a_frontend_started_after_the_workers_discovers_them(topology, deploy):
    deployment = deploy(topology, frontend="late")
    replies = [deployment.send(kind) for kind in topology.requests]
    assert all(reply.ok for reply in replies), "\n".join(r.describe() for r in replies)
    deployment.verify()


@pytest.mark.parametrize(
    "topology", [topology_param(AGGREGATED), topology_param(MM_ENCODE_PD, LONG)]
)
def test_a_restarted_frontend_rediscovers_every_worker(topology, deploy, record_property):
    deployment = deploy(topology, frontend="own")
    assert deployment.send(topology.requests[0]).ok
    listed_s = deployment.restart_frontend()
    record_property("frontend_restart_relisted_s", listed_s)
    assert listed_s is not None, "the model never came back in the restarted frontend's list"
    replies = [deployment.send(kind) for kind in topology.requests]
    assert all(reply.ok for reply in replies), "\n".join(r.describe() for r in replies)
    deployment.verify()


@LONG
@pytest.mark.parametrize("topology", [topology_param(AGGREGATED)])
def test_a_stray_prefill_worker_in_the_namespace_is_reported_by_name(
    topology, deploy, record_property
):
    """A prefill worker left behind in a namespace an aggregated worker serves."""
    deployment = deploy(topology)
    stray = deployment.add_stray(DISAGGREGATED.worker("prefill"))
    assert deployment.await_registered(stray.role, 30)
    reply = deployment.send(topology.requests[0])
    record_property("request_with_a_stray_prefill", reply.describe())
    with pytest.raises(ContractFailure) as failure:
        deployment.verify()
    (found,) = failure.value.find(INTERFERENCE)
    assert f"worker 'prefill' (pid {stray.pid}) is in namespace" in found.message
    assert f"v1/mdc/{deployment.plan.namespace}/prefill/generate/" in found.message


@LONG
@pytest.mark.parametrize("topology", [topology_param(AGGREGATED)])
def test_a_second_worker_with_another_card_is_rejected_and_the_first_keeps_serving(
    topology, deploy
):
    """#14215's shape: one mismatched card must not take the model offline."""
    deployment = deploy(topology)
    other = dataclasses.replace(
        topology.worker("worker"), role="worker-page-32", flags=("--page-size", "32")
    )
    stray = deployment.add_stray(other)
    assert deployment.await_registered(stray.role, 30)
    replies = [deployment.send("chat") for _ in range(5)]
    assert all(reply.ok for reply in replies), "\n".join(r.describe() for r in replies)
    with pytest.raises(ContractFailure) as failure:
        deployment.verify()
    assert failure.value.kinds() == {INCOMPATIBLE_WORKERS, INTERFERENCE}
    assert (
        f"worker 'worker-page-32' (pid {stray.pid})" in failure.value.find(INTERFERENCE)[0].message
    )
