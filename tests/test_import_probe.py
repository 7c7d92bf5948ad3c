"""A release environment whose stack cannot be imported is refused before anything starts:
one line naming the environment and the module, for any module (here one no list could
know), from the function and from a pytest session given that environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from discovery_harness.runtime import dynamo_env, import_probe
from discovery_harness.runtime.tier import CPU
from tests.inner_pytest import run_pytest

pytestmark = pytest.mark.process

MISSING = "harness_probe_module_nobody_ships"


def _environment_missing_a_module(root: Path) -> Path:
    """An interpreter of the harness's own stack (ai-dynamo installed) in front of which a
    `sglang` package imports a module that is not installed: as an sglang bump whose new
    dependency the environment lacks."""
    shadow = root / "shadow" / "sglang"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(f"import {MISSING}\n")
    python = root / "bin" / "python"
    python.parent.mkdir()
    python.write_text(
        "#!/bin/sh\n"
        f'export PYTHONPATH="{root / "shadow"}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    return root


def test_an_environment_whose_sglang_cannot_be_imported_is_refused_in_one_line(tmp_path):
    env = dynamo_env.resolve(_environment_missing_a_module(tmp_path))
    assert not env.own
    with pytest.raises(dynamo_env.DynamoEnvError) as refused:
        import_probe.refuse_unimportable(env, CPU)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"--dynamo-env {tmp_path / 'bin' / 'python'}: its workers cannot")
    assert f"module `{MISSING}` is not installed there" in message
    assert "shadow/sglang/__init__.py" in message and "nothing was started" in message


@pytest.mark.nightly  # ~11 s: the whole stack's import
def test_the_harnesss_own_stack_imports_in_the_probe():
    result = import_probe.run(dynamo_env.own(), stand_ins=True)
    assert result.error is None, result.failure()
    assert result.versions["ai-dynamo"] == dynamo_env.own().version


def test_a_session_given_that_environment_starts_nothing(tmp_path):
    env = _environment_missing_a_module(tmp_path / "env")
    result = run_pytest(
        "-q",
        "--dynamo-env",
        str(env),
        "scenarios/test_topologies.py::test_registers_and_serves[aggregated]",
        timeout=120,
    )
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"module `{MISSING}`" in lines[0], result.stderr
    assert "bringing up" not in result.stdout and "worker" not in result.stdout
