"""A deployment's plan is computed, not allocated in a constructor: every value from the
topology, the test's options and the session's facts, with ports from the allocator given."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from discovery_harness.cli import app as cli
from discovery_harness.deployment.options import FILE, LATE, NATS, OWN, SHARED, Planes, Settings
from discovery_harness.deployment.plan import DeployOptions, SessionFacts, plan
from discovery_harness.model.topology import Scenario
from discovery_harness.runtime.tier import GPU
from discovery_harness_scenarios.catalogue import AGGREGATED, DISAGGREGATED, MM_ENCODE_PD, MULTINODE

pytestmark = pytest.mark.unit

WORKDIR = Path("/nonexistent/harness")
FACTS = SessionFacts(settings=Settings(), workdir=WORKDIR, shared_frontend_port=8000)


class Allocator:
    """Hands out 40000, 40001, ... and remembers what it gave."""

    def __init__(self) -> None:
        self.given: list[int] = []

    def __call__(self, count: int) -> list[int]:
        ports = list(range(40000 + len(self.given), 40000 + len(self.given) + count))
        self.given += ports
        return ports


def _plan(what=AGGREGATED, facts=FACTS, **options):
    allocate = Allocator()
    return plan(what, DeployOptions(**options), facts, allocate, suffix="abc123"), allocate


def test_the_plan_names_and_places_the_deployment():
    planned, allocate = _plan()
    assert planned.namespace == "h-aggregated-abc123"
    assert planned.model_name == "aggregated-abc123"
    assert planned.workdir == WORKDIR / "deployments" / "h-aggregated-abc123"
    assert planned.scenario == Scenario.packed(AGGREGATED)
    assert (planned.frontend_mode, planned.frontend_port, planned.file_store) == (
        SHARED,
        8000,
        None,
    )
    assert allocate.given == [] and planned.held_ports() == []  # the session's frontend
    with pytest.raises(dataclasses.FrozenInstanceError):
        planned.namespace = "other"  # type: ignore[misc]


def test_planes_other_than_the_sessions_get_a_frontend_and_observer_of_their_own():
    planned, allocate = _plan(planes=Planes(discovery=FILE, request=NATS))
    assert planned.frontend_mode == OWN and planned.frontend_port == 40000
    assert planned.file_store == planned.workdir / "discovery"
    assert planned.env["DYN_DISCOVERY_BACKEND"] == "file"
    assert planned.env["DYN_REQUEST_PLANE"] == NATS
    assert planned.held_ports() == allocate.given == [40000]
    late, _ = _plan(frontend=LATE)
    assert late.frontend_mode == LATE and late.frontend_port == 40000


def test_ports_the_workers_share_are_allocated_once_per_deployment():
    planned, allocate = _plan(MULTINODE)
    assert dict(planned.shared_ports) == {"dist_init": 40000} and allocate.given == [40000]


def test_start_order_the_layouts_or_the_tests():
    assert _plan(DISAGGREGATED)[0].start_order == ()  # CPU tier: together
    layout = _plan(DISAGGREGATED, sequential=True)[0]
    assert layout.start_order == ("prefill", "decode") and not layout.explicit_order
    explicit = _plan(MM_ENCODE_PD, order=("mm-encoder", "mm-worker"))[0]
    assert explicit.start_order == ("mm-encoder", "mm-worker") and explicit.explicit_order
    assert explicit.first_started == ()


def test_forked_workers_get_the_forked_deadline_fresh_ones_the_fresh():
    template = dataclasses.replace(FACTS, template=True)
    forked, _ = _plan(facts=template)
    fresh, _ = _plan(facts=template, spawn="fresh")
    assert forked.forked and not fresh.forked
    assert forked.register_deadline_s < fresh.register_deadline_s


def test_gpu_tier_plans_each_roles_gpus_from_the_share():
    facts = dataclasses.replace(FACTS, settings=Settings(tier=GPU), gpu_share=("3", "5"))
    two_gpu = Scenario(DISAGGREGATED, DISAGGREGATED.gpu.placements[1])
    planned, _ = _plan(two_gpu, facts=facts)
    assert dict(planned.gpus) == {"prefill": ("3",), "decode": ("5",)}


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"order": ("decode",)}, "must name every role of disaggregated once"),
        ({"faults": {"prefil": "skip-registration"}}, "faults for roles not in disaggregated"),
        ({"frontend": "mine"}, "frontend must be one of"),
    ],
)
def test_bad_options_fail_in_the_plan_before_anything_starts(options, says):
    with pytest.raises(ValueError, match=says):
        _plan(DISAGGREGATED, **options)


def test_plan_prints_the_order_a_deployment_uses(capsys):
    """`plan --order` goes through the deployment's own plan(): the commands come in the
    order `DeploymentPlan.launch_order` gives (what Deployment.start follows), and the
    heading says each is registered before the next starts."""
    order = ("mm-worker", "mm-encoder")
    assert (
        cli.main(
            ["plan", "--tier", "cpu", "--topology", MM_ENCODE_PD.name, "--order", ",".join(order)]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "start order: mm-worker → mm-encoder (each registered before the next starts)" in printed
    roles = [
        line.split(":")[0].removeprefix("-- ")
        for line in printed.splitlines()
        if line.startswith("-- ")
    ]
    assert roles == list(order) == list(_plan(MM_ENCODE_PD, order=order)[0].launch_order)
    assert cli.main(["plan", "--tier", "cpu", "--topology", MM_ENCODE_PD.name]) == 0
    assert "start order: mm-encoder, mm-worker at once" in capsys.readouterr().out
    assert cli.main(["plan", "--tier", "gpu", "--topology", DISAGGREGATED.name]) == 0
    assert "start order: prefill → decode (each serving before the next starts)" in (
        capsys.readouterr().out
    )
