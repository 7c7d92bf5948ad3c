"""The harness's own bad input is one clear usage error before anything starts: exit 4, one
line on stderr, no traceback; nothing is deployed, no test passes by doing nothing.

One table over every kind: a non-positive duration, an unknown key, role, fault, topology
or choice, an option the chosen tier would ignore, and the CLI's commands alike.

Each case runs in this process (pytest's own `pytester` for a pytest session, the CLI's
`main` for a command), as a user's run would: same arguments, same checks, same exit code and
line. One case of each runs as a real subprocess, end to end."""

from __future__ import annotations

import subprocess

import pytest

from tests.inner_pytest import ONE_GPU, ROOT, cli_in_process, run_cli, run_pytest

SCENARIO = "scenarios/test_topologies.py::test_registers_and_serves[aggregated]"
GPU_SCENARIO = "scenarios/test_topologies.py::test_registers_and_serves[aggregated-1gpu]"

# (id, pytest arguments, environment, what the one line says)
PYTEST_CASES = [
    ("negative-register-deadline", ["--register-deadline", "-1"], {}, "more than 0 seconds"),
    ("negative-card-grace", ["--card-grace", "-5"], {}, "--card-grace -5: a duration"),
    ("zero-list-deadline", ["--list-deadline", "0"], {}, "--list-deadline 0: a duration"),
    ("zero-heartbeat", ["--progress-heartbeat", "0"], {}, "--progress-heartbeat 0: a dur"),
    ("unknown-role", ["--inject-fault", "no-such-role=skip-registration"], {}, "no topology"),
    ("unknown-fault", ["--inject-fault", "worker=no-such-fault"], {}, "unknown fault 'no-such"),
    ("malformed-fault", ["--inject-fault", "worker"], {}, "takes ROLE=FAULT"),
    ("unknown-infra", ["--infra", "carrier-pigeon"], {}, "--infra 'carrier-pigeon': not one"),
    ("unknown-infra-env", [], {"HARNESS_INFRA": "pigeon"}, "(from HARNESS_INFRA)"),
    ("unknown-tier", ["--tier", "tpu"], {}, "--tier 'tpu': not one of auto, cpu, gpu"),
    ("unknown-spawn", ["--spawn", "clone"], {}, "--spawn 'clone': not one of"),
    ("unknown-progress", ["--progress", "loud"], {}, "--progress 'loud': not one of"),
    ("unknown-model-key", ["--model", "diffusion=x/y"], {}, "unknown asset key 'diffusion'"),
    ("model-on-cpu-tier", ["--tier", "cpu", "--model", "text=/nonexistent"], {}, "ignores"),
    (
        "fault-on-gpu-tier",
        ["--tier", "gpu", "--inject-fault", "worker=skip-registration"],
        {},
        "faults exist only in the CPU tier's launcher",
    ),
    ("small-range", ["--port-range", "30000-30010"], {}, "a session needs at least 64"),
    ("bad-range", ["--port-range", "80-90000"], {}, "needs 1024 <= LOW < HIGH <= 32767"),
    ("zygote-on-gpu", ["--tier", "gpu", "--spawn", "zygote"], {}, "--spawn zygote exists"),
    ("no-dynamo-env", ["--dynamo-env", "/no/such/env"], {}, "no python interpreter there"),
    ("no-dynamo-src", ["--dynamo-src", "/no/such/src"], {}, "no components/src/dynamo there"),
]


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [pytest.param(args, env, says, id=name) for name, args, env, says in PYTEST_CASES],
)
def test_bad_option_is_one_usage_error(args, env, says, inner_pytest):
    result = inner_pytest("-q", *args, SCENARIO, env=env)
    _assert_one_usage_error(result, says, "ERROR: ")


@pytest.mark.process
def test_a_bad_option_is_one_usage_error_from_a_real_pytest_process():
    """The table's first case end to end: the interpreter's exit status and its stderr."""
    _, args, env, says = PYTEST_CASES[0]
    result = run_pytest("-q", *args, SCENARIO, env=env, timeout=60)
    _assert_one_usage_error(result, says, "ERROR: ")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tier", "gpu", SCENARIO], "on the GPU tier each layout is its own test: "),
        (["--tier", "cpu", GPU_SCENARIO], "on the CPU tier the id is [aggregated]"),
    ],
    ids=["cpu-id-on-gpu-tier", "gpu-id-on-cpu-tier"],
)
def test_a_test_id_of_the_other_tier_names_this_tiers_ids(args, says, inner_pytest):
    # One GPU said to be visible: with none, "no GPU" would be the usage error instead.
    result = inner_pytest("-q", *args, env=ONE_GPU)
    _assert_one_usage_error(result, says, "ERROR: ")
    if "--tier" in args and "gpu" in args:
        assert "[aggregated-1gpu]" in result.stderr


CLI_CASES = [
    ("plan-zero-gpus", ["plan", "--gpus", "0"], "--gpus 0: a GPU-tier plan needs at least 1"),
    ("preflight-unknown-option", ["preflight", "--bogus"], "unrecognized arguments: --bogus"),
    ("plan-negative-gpus", ["plan", "--gpus", "-3"], "--gpus -3: a GPU-tier plan needs"),
    ("plan-cpu-gpus", ["plan", "--tier", "cpu", "--gpus", "2"], "--gpus: the CPU tier"),
    ("plan-cpu-model", ["plan", "--tier", "cpu", "--model", "text=/nonexistent"], "tiny models"),
    ("plan-unknown-topology", ["plan", "--topology", "nope"], "unknown topology 'nope'"),
    ("plan-unknown-key", ["plan", "--model", "diffusion=x"], "unknown asset key 'diffusion'"),
    ("plan-unknown-tier", ["plan", "--tier", "tpu"], "invalid choice: 'tpu'"),
    ("plan-order-no-topology", ["plan", "--order", "prefill,decode"], "--order: name the one"),
    (
        "plan-order-missing-role",
        ["plan", "--topology", "disaggregated", "--order", "prefill"],
        "must name every role of disaggregated once",
    ),
    ("conformance-unknown-topology", ["conformance", "--topology", "nope"], "no such topology"),
    ("models-unknown-topology", ["models", "list", "nope"], "unknown topology 'nope'"),
    ("topologies-unknown-option", ["topologies", "--cpu"], "unrecognized arguments: --cpu"),
    ("unknown-command", ["bogus"], "invalid choice: 'bogus'"),
]


@pytest.mark.parametrize(
    ("args", "says"), [pytest.param(args, says, id=name) for name, args, says in CLI_CASES]
)
def test_bad_cli_input_is_one_usage_error(args, says, capsys):
    _assert_one_usage_error(cli_in_process(capsys, *args), says, ": error: ")


def _harness(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=60)


# Commands that say their own name instead of argparse's "error:" (they judge or start things).
OWN_WORDS_CASES = [
    ("up-unknown-topology", ["up", "nope"], "harness up: ", "unknown topology 'nope'"),
    ("up-unknown-fault", ["up", "aggregated", "--inject-fault", "worker=x"], "harness up: ", "x"),
    (
        "audit-negative-grace",
        ["audit", "--etcd", "http://127.0.0.1:1", "--grace", "-1"],
        "audit: ",
        "--grace -1",
    ),
    (
        "audit-unknown-topology",
        ["audit", "--etcd", "http://127.0.0.1:1", "--topology", "nope"],
        "audit: ",
        "no topology 'nope'",
    ),
    (
        "up-not-a-checkout",
        ["up", "aggregated", "--dynamo-src", "/no/such/src"],
        "harness up: ",
        "no components/src/dynamo there",
    ),
    (
        "bisect-without-checkout",
        ["bisect", "A", "B", "--topology", "aggregated"],
        "harness bisect: ",
        "--dynamo-src DIR",
    ),
    (
        "bisect-not-a-checkout",
        ["bisect", "A", "B", "--dynamo-src", "/no/such/src", "--topology", "aggregated"],
        "harness bisect: ",
        "no components/src/dynamo there",
    ),
    (
        "bisect-without-selection",
        ["bisect", "A", "B", "--dynamo-src", "/no/such/src"],
        "harness bisect: ",
        "--topology NAME ... or -m EXPR",
    ),
]


@pytest.mark.parametrize(
    ("args", "prefix", "says"),
    [pytest.param(args, prefix, says, id=name) for name, args, prefix, says in OWN_WORDS_CASES],
)
def test_every_command_gives_bad_input_the_same_exit_code(args, prefix, says, capsys):
    """up and audit too: 4, one line (they answered 2 before)."""
    _assert_one_usage_error(cli_in_process(capsys, *args), says, prefix)


@pytest.mark.process
def test_an_empty_selection_is_a_usage_error_and_leaves_the_report_alone():
    """The CLI end to end, in a real process: `conformance` runs an inner pytest session that
    holds no test, and says so in one line."""
    report = ROOT / "reports" / "conformance.xml"
    before = report.stat().st_mtime_ns if report.exists() else None
    result = _harness(
        "conformance", "-k", "no-such-test", "--infra", "process", "-p", "no:cacheprovider"
    )
    _assert_one_usage_error(result, "the selection holds no conformance test", ": error: ")
    assert (report.stat().st_mtime_ns if report.exists() else None) == before


def test_a_missing_etcd_binary_is_a_usage_error_naming_what_to_install(tmp_path, inner_pytest):
    bare = tmp_path / "bin"
    bare.mkdir()
    result = inner_pytest("-q", "--infra", "process", SCENARIO, env={"PATH": str(bare)})
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr[-2000:]
    assert "etcd and nats-server not on PATH" in result.stderr
    assert "apt-get install etcd-server nats-server" in result.stderr


def _assert_one_usage_error(
    result: subprocess.CompletedProcess[str], says: str, prefix: str
) -> None:
    shown = result.stdout[-2000:] + result.stderr[-2000:]
    assert result.returncode == 4, shown
    assert "Traceback" not in result.stderr + result.stdout, shown
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, shown
    assert prefix in lines[0], shown
    assert says in lines[0], shown
