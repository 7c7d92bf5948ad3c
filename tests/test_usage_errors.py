"""The harness's own bad input is one clear usage error (exit 4) before anything starts:
nothing is deployed, no test passes by doing nothing."""

from __future__ import annotations

import subprocess

import pytest

from tests.inner_pytest import run_pytest

SCENARIO = "scenarios/test_topologies.py::test_registers_and_serves[aggregated]"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_pytest("-q", *args, env=env, timeout=120)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--inject-fault", "no-such-role=skip-registration"], "no topology has a role"),
        (["--inject-fault", "worker=no-such-fault"], "unknown fault 'no-such-fault'"),
        (["--inject-fault", "worker"], "takes ROLE=FAULT"),
        (["--infra", "carrier-pigeon"], "invalid choice: 'carrier-pigeon'"),
        (["--port-range", "30000-30010"], "a session needs at least 64"),
        (["--port-range", "80-90000"], "needs 1024 <= LOW < HIGH <= 32767"),
        (["--tier", "gpu", "--spawn", "zygote"], "--spawn zygote exists on the CPU tier only"),
        (["--dynamo-env", "/no/such/env"], "no python interpreter there"),
    ],
    ids=[
        "unknown-role",
        "unknown-fault",
        "malformed-fault",
        "unknown-infra",
        "small-range",
        "bad-range",
        "zygote-on-gpu",
        "no-dynamo-env",
    ],
)
def test_bad_option_is_a_usage_error(args, says):
    result = _run(*args, SCENARIO)
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr[-2000:]
    assert says in result.stderr, result.stderr[-2000:]


def test_a_missing_etcd_binary_is_a_usage_error_naming_what_to_install(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    result = _run("--infra", "process", SCENARIO, env={"PATH": str(bare)})
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr[-2000:]
    assert "etcd and nats-server not on PATH" in result.stderr
    assert "apt-get install etcd-server nats-server" in result.stderr
