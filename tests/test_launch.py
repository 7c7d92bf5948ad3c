"""A worker's command is one structured value: module, harness options, Dynamo argv and the
whole environment the harness sets (planes and ports too), as named fields; the fresh
command line, the template's request and the plan are all made from it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from discovery_harness.deployment.options import FILE, NATS, Planes
from discovery_harness.model.catalogue import load
from discovery_harness.model.topology import Scenario
from discovery_harness.runtime.launch import WorkerCommand, worker_command
from discovery_harness.runtime.spawn import Zygote
from discovery_harness.runtime.tier import CPU, GPU, TierPolicy
from discovery_harness_workers.faults import FAULT_DELAY_ENV, FAULT_ENV
from tests.sites import worker_site

AGGREGATED = load().topology("aggregated")


def _command(tmp_path: Path, tier: TierPolicy = CPU, **options: object) -> WorkerCommand:
    site = options.pop("site", None) or worker_site(tmp_path)
    return worker_command(
        tier,
        Scenario.packed(AGGREGATED),
        AGGREGATED.worker("worker"),
        model_path="/models/text",
        site=site,
        timeout_s=30,
        **options,  # type: ignore[arg-type]
    )


def test_the_fresh_command_line_is_module_and_dynamo_argv(tmp_path):
    command = _command(tmp_path)
    assert command.argv() == [command.python, "-m", CPU.engine_module, *command.dynamo_argv]
    assert command.dynamo_argv[:2] == ("--model-path", "/models/text")
    assert command.dynamo_argv[-2:] == CPU.device_argv
    assert not any(arg.startswith("--harness") for arg in command.argv())


def test_a_fault_travels_by_name_in_the_environment_not_the_argv(tmp_path):
    plain = _command(tmp_path)
    faulty = _command(tmp_path, fault="delayed-registration", fault_delay_s=2.5)
    assert faulty.argv() == plain.argv()
    assert (faulty.harness.fault, faulty.harness.fault_delay_s) == ("delayed-registration", 2.5)
    env = faulty.environment()
    assert (env[FAULT_ENV], env[FAULT_DELAY_ENV]) == ("delayed-registration", "2.5")
    assert FAULT_ENV not in plain.environment()


def test_a_fault_on_a_tier_without_fault_injection_is_refused(tmp_path):
    with pytest.raises(ValueError, match="fault injection does not exist on the gpu tier"):
        _command(tmp_path, GPU, fault="skip-registration")


def test_the_deployments_planes_are_part_of_the_command(tmp_path):
    """What a deployment sets for its workers (another discovery backend, request plane) is
    in the command the plan prints, set last, not added after it was built."""
    planes = Planes(discovery=FILE, request=NATS).env(tmp_path / "discovery")
    command = _command(
        tmp_path, site=worker_site(tmp_path, deployment_env={**planes, "DYN_LOG": "debug"})
    )
    assert {k: command.env[k] for k in (*planes, "DYN_LOG")} == {**planes, "DYN_LOG": "debug"}
    assert command.environment()["DYN_DISCOVERY_BACKEND"] == "file"


def test_the_serialized_command_has_every_field_by_name(tmp_path):
    command = _command(tmp_path, fault="skip-registration")
    as_dict = json.loads(json.dumps(command.as_dict()))
    assert as_dict["module"] == CPU.engine_module
    assert as_dict["dynamo_argv"] == list(command.dynamo_argv)
    assert as_dict["harness"] == {"fault": "skip-registration", "fault_delay_s": 0.0}
    assert as_dict["argv"] == command.argv()
    assert as_dict["env"] == command.env


def test_the_template_refuses_a_command_for_another_module(tmp_path):
    """Only the CPU launcher is pre-imported: a GPU-tier command is never forked."""
    zygote = Zygote({}, tmp_path / "z.log", tmp_path)
    gpu_command = dataclasses.replace(_command(tmp_path), module=GPU.engine_module)
    with pytest.raises(ValueError, match=r"runs only `python -m "
                                         r"discovery_harness_workers\.cpu_sglang`"):
        zygote.spawn(gpu_command, tmp_path, tmp_path / "w.log")
