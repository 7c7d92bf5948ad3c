"""Marker selection: what `pytest -m multimodal`, `-m selftest` and the default run collect."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _collected(*args: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "scenarios", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 5), result.stdout + result.stderr
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_multimodal_selects_exactly_the_two_multimodal_topologies():
    assert sorted(_collected("-m", "multimodal")) == [
        "scenarios/test_topologies.py::test_registers_and_serves[mm-encode-p-d]",
        "scenarios/test_topologies.py::test_registers_and_serves[mm-encode-pd]",
    ]


def test_multimodal_self_tests_come_only_with_selftest():
    selected = _collected("-m", "multimodal and selftest")
    assert selected and all("test_selftests.py" in node for node in selected)
    assert any("[mm-encode-pd-mm-worker]" in node for node in selected)
    assert not any("[aggregated" in node for node in selected)


def test_the_default_run_has_every_topology_and_only_pre_merge_self_tests():
    default = _collected()
    topologies = [n for n in default if "test_topologies.py" in n]
    assert len(topologies) == 8
    self_tests = [n for n in default if "test_selftests.py" in n]
    everything = _collected("-m", "selftest")
    assert 0 < len(self_tests) < len(everything)
