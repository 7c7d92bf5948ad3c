"""The CPU stand-ins still match the sglang they replace (and the comparison can fail)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from discovery_harness.history.run import DEFAULT_ENVS
from discovery_harness_workers.drift import compare_signatures, missing_attributes
from tests.inner_pytest import run_drift


@pytest.mark.process
@pytest.mark.nightly
def test_installed_sglang_matches_the_stand_ins():
    # In a subprocess: importing sglang configures logging and CUDA probes process-wide.
    result = subprocess.run(
        [sys.executable, "-m", "discovery_harness_workers.drift"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "0 difference(s)" in result.stdout


@pytest.mark.process
@pytest.mark.nightly
@pytest.mark.timeout(600)
def test_each_pin_bump_environment_matches_the_stand_ins():
    """The stand-ins against every sglang a pin bump is rehearsed with (ci/setup.sh --sglang)."""
    pythons = sorted(DEFAULT_ENVS.glob("sglang-*/bin/python"))
    if not pythons:
        pytest.skip("no pin-bump environment built here: bash ci/setup.sh --sglang VERSION")
    for python in pythons:
        result = run_drift(python)
        assert result.returncode == 0, f"{python}: " + result.stdout + result.stderr[-3000:]
        assert "0 difference(s)" in result.stdout, f"{python}: {result.stdout[-3000:]}"


def test_a_drifted_signature_is_reported():
    def real(self, server_args, schedule_path=None, dist_init_method=None, rank=0): ...

    def stand_in(self, server_args, dist_init_method=None, rank=0): ...

    (problem,) = compare_signatures("MMEncoder.__init__", real, stand_in)
    assert "MMEncoder.__init__" in problem and "schedule_path" in problem


def test_a_vanished_name_is_reported():
    class Engine:
        def async_generate(self): ...

    assert missing_attributes("Engine", Engine, ["async_generate", "async_encode"]) == [
        "Engine has no attribute 'async_encode'"
    ]
