"""The harness installed from its wheel, used from a folder that is not the checkout.

A new venv whose own site-packages holds only the wheel; its dependencies are the set-up's
(the checkout's venv's site-packages on its path through a .pth line, which does not run that
folder's own .pth files, so the checkout's editable install is not importable there). Every
command then runs from a temp folder: what it needs must come from the package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.checkout_copy import copy_checkout

ROOT = Path(__file__).resolve().parents[1]
IMPORT_NAMES = ("discovery_harness", "discovery_harness_workers", "discovery_harness_scenarios")
pytestmark = [pytest.mark.timeout(900), pytest.mark.xdist_group("installed-wheel")]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv's python, the harness in it from a wheel built from the checkout's files."""
    work = tmp_path_factory.mktemp("installed")
    source = work / "source"
    copy_checkout(ROOT, source)  # the build writes build/ and *.egg-info beside its sources
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(work / "dist"), str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    wheel = next((work / "dist").glob("dynamo_sglang_discovery_harness-*.whl"))
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--disable-pip-version-check", str(wheel)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "set-up-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def elsewhere(python: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A command of the installed harness, from a folder outside the checkout."""
    folder = python.parents[2] / "elsewhere"
    folder.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HARNESS_"))}
    return subprocess.run(
        [str(python), *args], cwd=folder, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


@pytest.mark.process
def test_the_wheel_holds_what_the_commands_need_and_imports_from_the_venv(installed):
    code = (
        "import discovery_harness, discovery_harness_workers, discovery_harness_scenarios\n"
        "from discovery_harness.common import locations as at\n"
        "print(discovery_harness.__file__)\n"
        "for place in (at.ci_dir() / 'setup.sh', at.requirements_dir() / 'torch.txt',\n"
        "              at.requirements_dir() / 'releases' / '0.7.1' / 'nodeps.txt',\n"
        "              at.startup_hook_dir() / 'sitecustomize.py', at.conformance_tests()):\n"
        "    print(place, place.is_file())\n"
    )
    result = elsewhere(installed, "-c", code)
    assert result.returncode == 0, result.stderr
    venv = str(installed.parents[1])
    lines = result.stdout.splitlines()
    assert lines[0].startswith(venv), lines  # `import discovery_harness`: the venv's, not ROOT
    for line in lines[1:]:
        assert line.startswith(venv) and line.endswith(" True"), lines


@pytest.mark.process
def test_the_commands_and_the_scenarios_run_from_anywhere(installed):
    topologies = elsewhere(installed, "-m", "discovery_harness", "topologies")
    assert topologies.returncode == 0 and "mm-encode-pd" in topologies.stdout, topologies.stderr
    listed = elsewhere(
        installed, "-m", "pytest", "--pyargs", "discovery_harness_scenarios",
        "-m", "pre_merge and gpu_0", "--collect-only", "-q", "-p", "no:cacheprovider",
    )  # fmt: skip
    out = listed.stdout + listed.stderr
    assert listed.returncode == 0, out
    assert "test_topologies.py::test_registers_and_serves[mm-encode-pd]" in out, out
    assert "test_selftests.py" not in out  # self-tests: only when -m names them
    assert f"rootdir: {ROOT}" not in out


def test_the_import_names_collide_with_nothing_in_the_stack():
    """Nothing else installed beside the harness (ai-dynamo, sglang, torch and all they
    need, as the set-up installs them) provides one of the harness's import names."""
    import importlib.metadata

    clashing = {}
    for dist in importlib.metadata.distributions():
        if dist.metadata["Name"] == "dynamo-sglang-discovery-harness":
            continue
        tops = set((dist.read_text("top_level.txt") or "").split())
        tops |= {f.parts[0].removesuffix(".py") for f in dist.files or () if f.parts}
        for name in tops & set(IMPORT_NAMES):
            clashing[name] = dist.metadata["Name"]
    assert clashing == {}


@pytest.mark.nightly
@pytest.mark.long  # the wheel's commands and scenarios: the installed-wheel tests above
@pytest.mark.e2e
def test_the_conformance_matrix_passes_from_the_wheel(installed):
    """`python -m discovery_harness conformance --infra process` outside the checkout."""
    result = elsewhere(installed, "-m", "discovery_harness", "conformance", "--infra",
                       "process", timeout=840)  # fmt: skip
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert "=== conformance report ===" in out and "FAILED" not in out, out[-6000:]
    report = installed.parents[2] / "elsewhere" / "reports" / "conformance.xml"
    assert report.is_file(), out[-3000:]
