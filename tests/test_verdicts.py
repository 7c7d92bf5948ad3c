"""The deploy fixture reaches a verdict on every deployment, also when the test body raised
before calling verify(): a 503 after readiness is reported at teardown."""

from __future__ import annotations

import pytest

from tests.inner_pytest import ROOT, run_pytest

GIVES_UP = """
from scenarios.catalogue import AGGREGATED

def test_gives_up_before_its_verdict(deploy):
    deployment = deploy(AGGREGATED)
    deployment.kill("worker")  # SIGKILL: its keys outlive it until the lease expires
    deployment.send("chat")  # 503: recorded after readiness
    raise RuntimeError("the test body gave up before verify()")
"""


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_a_test_that_raises_still_gets_the_verdict(tmp_path):
    module = tmp_path / "test_gives_up.py"
    module.write_text(GIVES_UP)
    result = run_pytest(
        "-q", "-p", "harness.plugin", "--rootdir", str(ROOT), str(module), timeout=220
    )
    out = result.stdout
    assert result.returncode == 1, out[-3000:] + result.stderr[-2000:]
    assert "the test body gave up before verify()" in out
    assert "ERROR at teardown of test_gives_up_before_its_verdict" in out, out[-3000:]
    assert "[503-after-ready]" in out and "POST /v1/chat/completions -> 503" in out
