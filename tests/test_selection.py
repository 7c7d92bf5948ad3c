"""Marker selection: what `pytest -m multimodal`, `-m selftest` and the default run collect."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from discovery_harness.plugin.parametrize import marker_names
from discovery_harness_scenarios.catalogue import CATALOGUE
from tests.inner_pytest import ONE_GPU

InnerPytest = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def _collected(inner_pytest: InnerPytest) -> Callable[..., list[str]]:
    """The node ids a `--collect-only` run selects (scenarios/ unless `where` says)."""

    def collected(*args: str, where: tuple[str, ...] = ("scenarios",)) -> list[str]:
        result = inner_pytest("--collect-only", "-q", *where, *args)
        assert result.returncode in (0, 5), result.stdout + result.stderr
        return [line for line in result.stdout.splitlines() if "::" in line]

    return collected


@pytest.fixture
def _run(inner_pytest: InnerPytest) -> InnerPytest:
    return inner_pytest


def test_multimodal_selects_exactly_the_multimodal_topologies(_collected):
    selected = [n for n in _collected("-m", "multimodal") if "test_topologies.py" in n]
    multimodal = [t.name for t in CATALOGUE if "multimodal" in t.marks]
    assert {"mm-encode-pd", "mm-encode-p-d", "mm-native", "mm-native-p-d"} <= set(multimodal)
    assert sorted(selected) == sorted(
        f"scenarios/test_topologies.py::test_registers_and_serves[{name}]" for name in multimodal
    )


def test_multimodal_self_tests_come_only_with_selftest(_collected):
    selected = _collected("-m", "multimodal and selftest")
    # the scenario self-tests, the canary's and the audit's, each injecting a fault
    homes = ("test_selftests.py", "test_canary_selftests.py", "test_audit.py")
    assert selected and all(any(home in node for home in homes) for node in selected)
    assert any("test_selftests.py" in node for node in selected)
    assert any("[mm-encode-pd-mm-worker]" in node for node in selected)
    assert not any("[aggregated" in node for node in selected)


def test_multimodal_over_the_whole_checkout_is_the_scenarios_and_no_self_test(_collected):
    """`pytest -m multimodal` is Dynamo's multimodal conformance: the harness's tests of
    itself (tests/) and its fault-injecting self-tests join an -m only when it names them."""
    everywhere = ("tests", "scenarios")
    multimodal = _collected("-m", "multimodal", where=everywhere)
    mm_encode_pd = "scenarios/test_topologies.py::test_registers_and_serves[mm-encode-pd]"
    assert mm_encode_pd in multimodal
    assert all(node.startswith("scenarios/") for node in multimodal), multimodal
    assert not set(multimodal) & set(_collected("-m", "selftest"))
    # CI's second run takes the nightly tests of tests/, but the long ones; -m long takes those
    ci_second_run = _collected("-m", "(nightly or selftest) and not long", where=everywhere)
    bisect = (
        "tests/test_dynamo_src.py::test_bisect_of_a_generated_history_names_the_breaking_commit"
    )
    history = "tests/test_releases.py::test_the_history_finds_4486_on_the_release_that_shipped_it"
    assert history in ci_second_run and bisect not in ci_second_run
    gateway_case = "scenarios/test_selftests.py::test_skipped_registration_is_caught_and_names_the_role[gateway-gateway]"  # noqa: E501
    long = _collected("-m", "long", where=everywhere)
    assert bisect in long and gateway_case in long  # a long self-test comes with `long` too
    assert gateway_case not in ci_second_run


def test_an_expressions_marker_names_are_its_words_but_the_operators():
    assert marker_names("(multimodal and not selftest) or nightly") == {
        "multimodal",
        "selftest",
        "nightly",
    }
    assert marker_names("") == set()
    assert marker_names("gpu_2 and pre_merge") == {"gpu_2", "pre_merge"}


def test_the_default_run_has_every_topology_and_only_pre_merge_self_tests(_collected):
    default = _collected()
    topologies = [n for n in default if "test_topologies.py" in n]
    assert len(topologies) == len([t for t in CATALOGUE if not t.cpu_nightly])
    self_tests = [n for n in default if "test_selftests.py" in n]
    everything = _collected("-m", "selftest")
    assert 0 < len(self_tests) < len(everything)


def test_gpu_tier_items_are_one_per_layout_marked_from_the_layout(_run):
    def ids(marker: str) -> list[str]:
        result = _run("--collect-only", "-q", "--tier", "gpu", "-m", marker, "scenarios")
        assert result.returncode in (0, 5), result.stdout + result.stderr
        return sorted(
            line.split("[")[1].rstrip("]")
            for line in result.stdout.splitlines()
            if "test_topologies.py::" in line
        )

    layouts = {(t.name, p.gpus) for t in CATALOGUE for p in t.gpu.placements}
    assert ids("gpu_2") == sorted(f"{name}-2gpu" for name, gpus in layouts if gpus == 2)
    assert ids("gpu_1") == sorted(f"{name}-1gpu" for name, gpus in layouts if gpus == 1)
    result = _run("--collect-only", "-q", "--tier", "gpu", "-m", "gpu_0", "scenarios")
    assert "test_topologies.py" not in result.stdout  # gpu_0 = CPU-tier tests only


def test_gpu_tier_run_says_its_tier_and_models_and_skips_layouts_too_big(_run):
    result = _run(
        "-q",
        "-rs",
        "--tier",
        "gpu",
        "-m",
        "gpu_2",
        "scenarios/test_topologies.py",
        env=ONE_GPU,
    )
    out = result.stdout
    assert "discovery harness: tier gpu: asked for with --tier" in out, out
    assert "models: text=Qwen/Qwen3-0.6B" in out, out
    two_gpu = sum(1 for t in CATALOGUE for p in t.gpu.placements if p.gpus == 2)
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == two_gpu, out
    assert all("needs 2 GPU(s); this run has 1 (0;" in line for line in skipped), out
    assert f"{two_gpu} skipped" in out, out
    # Every layout skipped: nothing ran, and a GPU-tier session never passes green so.
    assert result.returncode == 1, out
    assert "GPU layouts not run here" in out and "GPU tier: nothing ran" in out, out


def test_gpu_tier_missing_model_is_one_clear_error(tmp_path, _run):
    """Before any worker starts: the topology, the key and the command that fixes it."""
    result = _run(
        "-q",
        "--tier",
        "gpu",
        "--infra",
        "process",
        "scenarios/test_topologies.py::test_registers_and_serves[aggregated-1gpu]",
        env={
            **ONE_GPU,
            "HF_HOME": str(tmp_path / "empty-hf"),
            "HF_HUB_OFFLINE": "1",
        },
    )
    assert result.returncode == 4, result.stdout + result.stderr  # a usage error
    assert "topology 'aggregated', key 'text'" in result.stderr, result.stderr
    assert "python -m discovery_harness models fetch aggregated" in result.stderr
    assert "passed" not in result.stdout and "failed" not in result.stdout


def test_a_model_override_for_an_unknown_key_is_a_usage_error(_run):
    result = _run("--collect-only", "-q", "--model", "diffusion=black-forest-labs/FLUX.1-schnell")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "unknown asset key 'diffusion'" in result.stderr


def test_a_unit_test_that_starts_a_process_is_refused_naming_the_marker(request):
    """tests/conftest.py holds `unit` items to their word over setup (fixtures too) and call."""
    from tests.conftest import _refusing_processes

    assert request.node.get_closest_marker("unit") is not None
    refused = pytest.raises(AssertionError, match="mark it `process`")
    with _refusing_processes(request.node), refused:
        subprocess.run(["true"], check=True)
