"""The plugin installed into another suite (as it would be in Dynamo's test image) changes
nothing there until a test asks for the harness; a test that asks gets a catalogue topology,
judged by the same verdict.

The foreign suite has its own conftest (an option named like one of the harness's, an
os.environ change that outlives its test) and Dynamo's marker names, registered and strict.
It records, item by item, what was collected, deselected and how each phase ended; the
same run without the plugin (`-p no:discovery_harness.plugin`) must record exactly the same.
Those runs are pytest sessions in this process (pytester: what is compared is the sessions'
records, not the interpreter); the run that deploys, a real user's command, is a subprocess.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.inner_pytest import run_child

DYNAMO_MARKERS = ("pre_merge", "post_merge", "nightly", "gpu_0", "gpu_1", "sglang", "e2e", "unit")
PYPROJECT = (
    "[tool.pytest.ini_options]\n"
    'addopts = "--strict-markers -p no:cacheprovider"\n'
    "markers = [" + ", ".join(f'"{m}: Dynamo\'s"' for m in DYNAMO_MARKERS) + "]\n"
)
CONFTEST = """
import json, os
import pytest

def pytest_addoption(parser):
    parser.addoption("--model", default="the suite's own")  # a name the harness uses too

RECORD = {"collected": [], "deselected": [], "outcomes": {}}

def pytest_collection_modifyitems(items):
    RECORD["collected"] = [item.nodeid for item in items]

def pytest_deselected(items):
    RECORD["deselected"] += [item.nodeid for item in items]

def pytest_runtest_logreport(report):
    RECORD["outcomes"].setdefault(report.nodeid, []).append(f"{report.when}:{report.outcome}")

def pytest_sessionfinish(session, exitstatus):
    RECORD["exit"] = int(exitstatus)
    with open(os.environ["FOREIGN_RECORD"], "w") as sink:
        json.dump(RECORD, sink, indent=1, sort_keys=True)
"""
TESTS = """
import os
import pytest

@pytest.mark.pre_merge
@pytest.mark.gpu_0
def test_cpu_check():
    assert True

@pytest.mark.nightly
def test_long_one():
    assert True

@pytest.mark.pre_merge
@pytest.mark.gpu_1
@pytest.mark.sglang
def test_needs_a_gpu():
    assert True

@pytest.mark.e2e
@pytest.mark.unit
def test_marked_twice():
    assert True

def test_leaves_a_variable():
    os.environ["FOREIGN_LEFT"] = "1"

def test_finds_the_variable():  # the suite's own order dependence, kept as it is
    assert os.environ.get("FOREIGN_LEFT") == "1"

def test_reads_its_option(request):
    assert request.config.getoption("model") == "the suite's own"

@pytest.mark.skip(reason="the suite's own skip")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False

def test_fails():
    assert False
"""
ASKS_FOR_A_TOPOLOGY = """
import httpx
import pytest


@pytest.mark.pre_merge
@pytest.mark.gpu_0
@pytest.mark.discovery_topology("mm-encode-pd")  # see: python -m discovery_harness topologies
def test_my_change_keeps_multimodal_discovery(discovery_deployment):
    listed = httpx.get(f"{discovery_deployment.frontend_url}/v1/models", timeout=10).json()
    assert discovery_deployment.model in [m["id"] for m in listed["data"]]
    reply = discovery_deployment.send("chat-image")  # an image and a question, judged
    assert reply.ok, reply.problem
"""  # docs/ci.md "Using it from another test suite", word for word


def test_the_docs_show_the_example_this_module_runs():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "ci.md").read_text()
    section = doc.split("## Using it from another test suite", 1)[1].split("\n## ", 1)[0]
    assert "```python\n" + ASKS_FOR_A_TOPOLOGY.lstrip("\n") + "```" in section


def foreign_suite(root: Path, *, asks_for_a_topology: bool = False) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (root / "tests" / "test_suite.py").write_text(TESTS)
    if asks_for_a_topology:
        (root / "tests" / "test_discovery.py").write_text(ASKS_FOR_A_TOPOLOGY)
    return root


def _files(suite: Path) -> tuple[Path, Path]:
    """A new run's record and step summary files (the summary empty)."""
    record = suite / f"record-{len(list(suite.glob('record-*')))}.json"
    summary = suite / f"summary-{record.stem}.md"
    summary.write_text("")
    return record, summary


def _own_environment(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The environment without the harness's variables and the outer pytest's."""
    return {
        k: v
        for k, v in env.items()
        if not k.startswith(("PYTEST_", "HARNESS_")) and k != "GITHUB_STEP_SUMMARY"
    }


def _outcome(record: Path, output: str, args: tuple[str, ...]) -> dict | None:
    if "--help" in args:
        return None
    assert record.exists(), output
    return json.loads(record.read_text())


def run(suite: Path, *args: str, timeout: float = 120) -> tuple[dict | None, str, Path]:
    """The suite's run from its own folder, in a new interpreter: its record, its output, its
    step summary file."""
    record, summary = _files(suite)
    env = _own_environment(os.environ)
    env.update(FOREIGN_RECORD=str(record), GITHUB_STEP_SUMMARY=str(summary))
    done = run_child(
        [sys.executable, "-m", "pytest", *args], timeout=timeout, cwd=suite, whole_env=env
    )
    output = done.stdout + done.stderr
    return _outcome(record, output, args), output, summary


@pytest.fixture
def run_here(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[dict | None, str, Path]]:
    """`run`, as a pytest session in this process (pytester), in the same environment: what
    one test of the suite leaves in os.environ is gone before the next run."""

    def run_in_process(suite: Path, *args: str) -> tuple[dict | None, str, Path]:
        record, summary = _files(suite)
        with monkeypatch.context() as patch:
            patch.chdir(suite)
            for name in set(os.environ) - set(_own_environment(os.environ)):
                patch.delenv(name)
            patch.setenv("FOREIGN_RECORD", str(record))
            patch.setenv("GITHUB_STEP_SUMMARY", str(summary))
            patch.delenv("FOREIGN_LEFT", raising=False)  # the suite's own test sets it
            done = pytester.runpytest_inprocess(*args)
            os.environ.pop("FOREIGN_LEFT", None)
        output = "\n".join(done.outlines + done.errlines)
        return _outcome(record, output, args), output, summary

    return run_in_process


@pytest.mark.parametrize(
    "selection",
    [[], ["-m", "nightly"], ["-m", "pre_merge and gpu_0"], ["-m", "not nightly", "-x"]],
    ids=["no-m", "nightly", "pre_merge-and-gpu_0", "not-nightly-x"],
)
def test_a_suite_that_does_not_use_the_harness_runs_exactly_as_without_it(
    tmp_path, selection, run_here
):
    suite = foreign_suite(tmp_path / "suite")
    with_plugin, output, summary = run_here(suite, *selection)
    without, _, _ = run_here(suite, *selection, "-p", "no:discovery_harness.plugin")
    assert with_plugin is not None and with_plugin == without, output
    assert with_plugin["collected"], output  # the comparison compared something
    assert "discovery harness" not in output
    assert not (suite / "reports").exists()
    assert summary.read_text() == ""


def test_no_discovery_harness_unloads_the_plugin(tmp_path, run_here):
    suite = foreign_suite(tmp_path / "suite")
    _, loaded, _ = run_here(suite, "--help")
    _, unloaded, _ = run_here(suite, "--help", "-p", "no:discovery_harness.plugin")
    assert "--tier=" in loaded and "--tier=" not in unloaded
    # The suite's own --model wins over the harness's (which it leaves out).
    assert "--model=" in unloaded and "--model=KEY=REF" not in loaded


@pytest.mark.e2e
@pytest.mark.nightly
@pytest.mark.timeout(300)
def test_a_test_of_another_suite_gets_a_topology_and_the_verdict(tmp_path, run_here):
    suite = foreign_suite(tmp_path / "suite", asks_for_a_topology=True)
    record, output, summary = run(
        suite, "-m", "pre_merge and gpu_0", "--infra", "process", timeout=280
    )
    assert record is not None, output
    topology_test = "tests/test_discovery.py::test_my_change_keeps_multimodal_discovery"
    assert record["outcomes"][topology_test] == [
        "setup:passed",
        "call:passed",
        "teardown:passed",
    ], output
    assert "discovery harness: tier cpu" in output, output
    # The suite's own items: as they are without the plugin.
    without, _, _ = run_here(
        suite,
        "-m",
        "pre_merge and gpu_0",
        "-p",
        "no:discovery_harness.plugin",
        "--ignore=tests/test_discovery.py",  # its marker and fixture are the plugin's
    )
    assert without is not None
    del record["outcomes"][topology_test]
    assert record["outcomes"] == without["outcomes"] != {}, output
    assert "mm-encode-pd" in summary.read_text()  # the harness's report, its items only
    assert "test_cpu_check" not in summary.read_text()


@pytest.mark.selftest
@pytest.mark.nightly
@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_a_topology_of_another_suite_breaking_its_contract_fails_that_test(tmp_path):
    suite = foreign_suite(tmp_path / "suite", asks_for_a_topology=True)
    record, output, _ = run(
        suite,
        "tests/test_discovery.py",
        "--infra",
        "process",
        "--inject-fault",
        "mm-worker=skip-registration",
        timeout=280,
    )
    assert record is not None, output
    test = "tests/test_discovery.py::test_my_change_keeps_multimodal_discovery"
    phases = record["outcomes"][test]
    assert "setup:failed" in phases, output
    assert "serving but without a model card" in output, output[-4000:]
    assert "worker 'mm-worker' (pid " in output, output[-4000:]
