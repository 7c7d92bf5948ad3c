"""Contracts per Dynamo release: era selection, era command lines, the history's table.

The fast tests here run in the default command; the ones that need the release environments
(`bash ci/setup.sh --dynamo 0.7.1` and `0.8.1`) are nightly: each release's stand-ins against
that release's installed code, and the conformance history itself, which must find Dynamo
#4486 on 0.7.1 by running it (nothing tells the harness which release is buggy).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest

from harness.history import table
from harness.history.run import DEFAULT_ENVS, ROOT, ReleaseRun, read_junit, run_release
from harness.model.catalogue import load
from harness.model.topology import Scenario, UnsupportedRelease
from harness.runtime import dynamo_env, tier
from harness.runtime.launch import worker_command
from tests.sites import worker_site

CATALOGUE = load()
OLD_RELEASES = ("0.7.1", "0.8.1")


def test_each_release_gets_its_era_or_a_reason():
    mm = CATALOGUE.topology("mm-encode-pd")
    assert mm.for_release(dynamo_env.own().version) is mm
    old = mm.for_release("0.7.1")
    assert [w.role for w in old.workers] == ["mm-processor", "mm-encoder", "mm-worker"]
    assert old.era is not None and old.era.request_plane == "nats"
    assert mm.for_release("0.8.1").era.request_plane == "tcp"  # type: ignore[union-attr]
    with pytest.raises(UnsupportedRelease, match=r"no rerank worker before 0\.9"):
        CATALOGUE.topology("rerank").for_release("0.7.1")
    with pytest.raises(UnsupportedRelease, match=r"no contract declared for ai-dynamo 0\.9\.1"):
        mm.for_release("0.9.1")


def test_an_era_command_line_takes_the_namespace_from_the_environment(tmp_path: Path):
    topology = CATALOGUE.topology("mm-encode-pd").for_release("0.7.1")
    site = worker_site(tmp_path, model_name="Qwen/Qwen2.5-VL-7B-Instruct")
    command = worker_command(
        tier.CPU,
        Scenario.packed(topology),
        topology.worker("mm-encoder"),
        model_path="/models/vl",
        site=site,
        timeout_s=30,
    )
    assert "--namespace" not in command.dynamo_argv
    assert command.env["DYN_NAMESPACE"] == "h-ns"
    assert "--multimodal-encode-worker" in command.dynamo_argv


def test_a_missing_release_environment_is_one_clear_error(tmp_path: Path):
    with pytest.raises(dynamo_env.DynamoEnvError, match=r"ci/setup\.sh --dynamo VERSION"):
        dynamo_env.resolve(tmp_path / "nowhere")


def _junit(path: Path) -> None:
    """A JUnit file as a release's run writes it: one failed and one skipped topology."""
    suites = ElementTree.Element("testsuites")
    suite = ElementTree.SubElement(suites, "testsuite", name="pytest", time="42.0")
    failed = ElementTree.SubElement(
        suite, "testcase", name="test_registers_and_serves[mm-encode-pd]"
    )
    properties = ElementTree.SubElement(failed, "properties")
    found = [
        never_registered := {"kind": "never-registered", "role": "mm-encoder"},
        {"kind": "chat-image", "status": 200, "ok": True},
    ]
    never_registered["message"] = "worker mm-encoder never registered"
    for name, value in zip(("history.violation", "history.request"), found, strict=True):
        ElementTree.SubElement(properties, "property", name=name, value=json.dumps(value))
    ElementTree.SubElement(failed, "failure", message="ContractFailure: broke its contract")
    skipped = ElementTree.SubElement(suite, "testcase", name="test_registers_and_serves[rerank]")
    reason = "rerank on ai-dynamo 0.7.1: no rerank worker before 0.9"
    ElementTree.SubElement(skipped, "skipped", message=reason)
    ElementTree.ElementTree(suites).write(path)


def test_the_history_table_shows_each_check_and_violation(tmp_path: Path):
    junit = tmp_path / "junit.xml"
    _junit(junit)
    findings, seconds = read_junit(junit)
    assert seconds == 42.0
    run = ReleaseRun("0.7.1", "env", findings)
    text = table.markdown([run], ["mm-encode-pd", "rerank"])
    assert "| 0.7.1 | mm-encode-pd | FAILED | never-registered (mm-encoder) | chat-image 200 |" in (
        text
    )
    assert "| 0.7.1 | rerank | skipped | rerank on ai-dynamo 0.7.1: no rerank worker" in text
    assert "[never-registered]: worker mm-encoder never registered" in text


def _release_env(release: str) -> Path:
    env = DEFAULT_ENVS / f"dynamo-{release}"
    if not (env / "bin" / "python").exists():
        pytest.fail(
            f"no environment for ai-dynamo {release}: run bash ci/setup.sh --dynamo {release}"
        )
    return env


@pytest.mark.nightly
@pytest.mark.timeout(600)
@pytest.mark.parametrize("release", OLD_RELEASES)
def test_each_release_matches_its_stand_ins(release: str):
    python = _release_env(release) / "bin" / "python"
    result = subprocess.run(
        [str(python), "-m", "workers.drift"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "0 difference(s)" in result.stdout


def _statuses(item) -> set[int]:
    return {r["status"] for r in item.requests}


def _kinds(item, role: str | None = None) -> set[str]:
    return {v["kind"] for v in item.violations if role is None or v["role"] == role}


@pytest.mark.nightly
@pytest.mark.timeout(900)
def test_the_history_finds_4486_on_the_release_that_shipped_it(tmp_path: Path):
    for release in OLD_RELEASES:
        _release_env(release)
    topologies = ["aggregated", "mm-encode-pd", "mm-encode-p-d"]
    runs = {
        release: run_release(release, topologies, DEFAULT_ENVS, tmp_path, [])
        for release in (*OLD_RELEASES, dynamo_env.own().version)
    }
    print(table.markdown(list(runs.values()), topologies))
    for run in runs.values():
        assert run.error is None, run.error
        assert run.findings["aggregated"].outcome == "passed", run.findings["aggregated"]

    # 0.7.1: the image chat answers 200 while encoder and PD worker never registered a card.
    pd = runs["0.7.1"].findings["mm-encode-pd"]
    assert pd.outcome == "failed" and 200 in _statuses(pd)
    assert "never-registered" in _kinds(pd, "mm-encoder") and "never-registered" in _kinds(
        pd, "mm-worker"
    )
    # 0.8.1: the PD worker dies at start; the E/P/D prefill card is public, chat misrouted.
    assert "worker-exited" in _kinds(runs["0.8.1"].findings["mm-encode-pd"], "mm-worker")
    epd = runs["0.8.1"].findings["mm-encode-p-d"]
    assert "internal-advertised" in _kinds(epd, "mm-prefill") and 500 in _statuses(epd)
    # 1.6.1: conformant, apart from the declared E/P/D known violation.
    for name in ("mm-encode-pd", "mm-encode-p-d"):
        assert runs[dynamo_env.own().version].findings[name].outcome == "passed"
