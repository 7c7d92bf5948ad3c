"""Every worker command the GPU tier would run parses under 1.6.1's own parser, in its mode.

The commands come from the one builder both tiers use (discovery_harness.runtime.launch, via the
plan),
with the GPU tier's real model names, resolved offline in a Hugging Face cache that holds tiny
local model dirs of each model's kind under those names, in the GPU plans' own Hugging Face
environment (`HF_HUB_OFFLINE=1` against `HF_HOME`). A flag 1.6.1 rejects, a P/D worker left
on the mooncake backend, a dedicated-encoder worker with radix cache on, a cap that does not
reach sglang, or an environment in which a cached model name does not resolve fails here, on
CPU: in CI's `-m "nightly or selftest"` run on every change (the parse imports sglang:
kept out of the README's one-minute run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from discovery_harness.cli.plan import build_plan
from discovery_harness.model.catalogue import load
from discovery_harness.runtime.launch import WorkerCommand
from discovery_harness.runtime.model_source import TinyModels, gpu_models
from discovery_harness.runtime.tier import CPU, GPU, tier_differences
from tests.hf_cache import cache_model

ROOT = Path(__file__).resolve().parent.parent
GPU_COUNTS = (1, 2)
CATALOGUE = load()
# One xdist worker for the module: the parse is a module fixture (pyproject: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("worker-commands")


def _parse_all(argvs: list[list[str]], env: dict[str, str] | None = None) -> list[dict]:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "parse_worker_commands.py")],
        input=json.dumps(argvs),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runner's warm cache: every GPU model name, holding a tiny dir of the same kind."""
    workdir = tmp_path_factory.mktemp("hf")
    tiny = TinyModels(workdir / "tiny")
    home = workdir / "home"
    for key, ref in CATALOGUE.gpu_models.items():
        cache_model(home, ref, Path(tiny.path_for("-", key)))
    return home


@pytest.fixture(scope="module")
def plans(
    tmp_path_factory: pytest.TempPathFactory, hf_home: Path
) -> dict[str, list[WorkerCommand]]:
    workdir = tmp_path_factory.mktemp("plans")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HOME", str(hf_home))
        patch.delenv("HF_HUB_CACHE", raising=False)
        cached = gpu_models([])  # raises MissingModels unless every name is in the cache
        plans = {
            f"gpu{n}": build_plan(CATALOGUE, GPU, gpu_count=n, workdir=workdir, models=cached)
            for n in GPU_COUNTS
        }
    plans["cpu"] = build_plan(CATALOGUE, CPU, workdir=workdir)
    return plans


def _plan_env(command: WorkerCommand, hf_home: Path) -> dict[str, str]:
    """What a plan's workers see of Hugging Face (offline, the runner's HF_HOME)."""
    env = {**os.environ, "HF_HOME": str(hf_home)}
    env.update({k: v for k, v in command.env.items() if k.startswith(("HF_", "TRANSF"))})
    return env


@pytest.fixture(scope="module")
def parsed(plans: dict[str, list[WorkerCommand]], hf_home: Path) -> dict[tuple[str, int], dict]:
    """Every command in one parser process (it imports sglang: seconds), in the GPU plans'
    environment: the CPU plan's commands name local dirs, so the one way its environment
    differs (a private, empty HF_HOME) cannot reach their parse. Appended: deliberately broken
    commands and one naming a model the runner's cache does not hold."""
    named = [(name, i, c) for name in plans for i, c in enumerate(plans[name])]
    extra = {
        **{("broken", i): argv for i, argv in enumerate(_broken(plans["cpu"][0]))},
        ("uncached", 0): _with_model(plans["gpu1"][0], UNCACHED_MODEL),
    }
    argvs = [list(c.dynamo_argv) for _, _, c in named] + list(extra.values())
    outcome = _parse_all(argvs, _plan_env(plans["gpu1"][0], hf_home))
    keys = [(name, i) for name, i, _ in named] + list(extra)
    return dict(zip(keys, outcome, strict=True))


UNCACHED_MODEL = "harness-tests/never-fetched"


def _with_model(command: WorkerCommand, model: str) -> list[str]:
    argv = list(command.dynamo_argv)
    argv[argv.index("--model-path") + 1] = model
    return argv


def _broken(command: WorkerCommand) -> list[list[str]]:
    """A command with a flag 1.6.1 does not know, and one with a mode it rejects."""
    argv = list(command.dynamo_argv)
    return [[*argv, "--no-such-flag"], [*argv, "--disaggregation-mode", "both"]]


def _flag_value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def _expected_mode(command: WorkerCommand) -> dict[str, object]:
    """What the parsed config must say, derived from the catalogue's declaration."""
    spec = CATALOGUE.topology(command.topology).worker(command.role)
    flags = list(spec.flags)
    mode = _flag_value(flags, "--disaggregation-mode")
    dynamo: dict[str, object] = {"component": spec.component}
    server: dict[str, object] = {}
    for flag in ("--embedding-worker", "--rerank-worker"):
        dynamo[flag[2:].replace("-", "_")] = flag in flags
    for flag in ("--image-diffusion-worker", "--video-generation-worker"):
        dynamo[flag[2:].replace("-", "_")] = flag in flags
    if "--enable-multimodal" in flags:
        dynamo["enable_multimodal"] = True
        dynamo["multimodal_encode_worker"] = mode == "encode"
        dynamo["multimodal_worker"] = "--dedicated-mm-encoder" in flags
    if "--dedicated-mm-encoder" in flags:
        server["disable_radix_cache"] = True
    if mode in ("prefill", "decode"):
        server["disaggregation_mode"] = mode
        server["disaggregation_transfer_backend"] = "nixl"
    elif not any(f in flags for f in ("--image-diffusion-worker", "--video-generation-worker")):
        server["disaggregation_mode"] = "null"
    return {"dynamo": dynamo, "server": server}


def _expected_caps(command: WorkerCommand) -> dict[str, object]:
    """Every flag of the layout (memory, KV, batch caps) reaches sglang's server args."""
    topology = CATALOGUE.topology(command.topology)
    layout = next(p for p in topology.gpu.placements if p.name == command.layout)
    flags = list(layout.of(command.role).flags)
    caps: dict[str, object] = {}
    for index, flag in enumerate(flags):
        if not flag.startswith("--"):
            continue
        value = flags[index + 1] if index + 1 < len(flags) else None
        attribute = flag[2:].replace("-", "_")
        caps[attribute] = True if value is None or value.startswith("--") else value
    return caps


@pytest.mark.nightly
@pytest.mark.process  # the `parsed` fixture runs 1.6.1's parser in a child
@pytest.mark.parametrize("plan", [*(f"gpu{n}" for n in GPU_COUNTS), "cpu"])
def test_every_worker_command_parses_in_its_intended_mode(plan, plans, parsed):
    problems = []
    for index, command in enumerate(plans[plan]):
        result = parsed[(plan, index)]
        where = f"{command.topology}/{command.layout}/{command.role}"
        if "error" in result:
            problems.append(f"{where}: 1.6.1 rejects the command: {result['error']}")
            continue
        expected = _expected_mode(command)
        for section in ("dynamo", "server"):
            for key, value in expected[section].items():
                if result[section].get(key) != value:
                    problems.append(
                        f"{where}: {section}.{key} is {result[section].get(key)!r}, "
                        f"expected {value!r}"
                    )
        for key, value in _expected_caps(command).items():
            if str(result["server"].get(key)) != str(value):
                problems.append(
                    f"{where}: cap {key} is {result['server'].get(key)!r}, expected {value!r}"
                )
    assert not problems, "\n".join(problems)


def test_every_layout_is_planned_on_enough_gpus(plans):
    """Each GPU count plans every layout that fits it; each topology has a packed layout."""
    for n in GPU_COUNTS:
        planned = {(c.topology, c.layout) for c in plans[f"gpu{n}"]}
        expected = {
            (t.name, p.name) for t in CATALOGUE.topologies for p in t.gpu.placements if p.gpus <= n
        }
        assert planned == expected
    single = {t.name for t in CATALOGUE.topologies if t.gpu.packed.gpus == 1}
    assert {c.topology for c in plans["gpu1"]} == single
    # Every topology has a 1-GPU layout, unless it says why not (multinode: a GPU per node).
    assert single == {t.name for t in CATALOGUE.topologies if t.gpu.no_single_gpu is None}


def test_gpu_sets_stay_within_the_layout(plans):
    for n in GPU_COUNTS:
        by_layout: dict[tuple[str, str], set[str]] = {}
        for command in plans[f"gpu{n}"]:
            assert len(command.gpus) == 1, command
            assert command.env["CUDA_VISIBLE_DEVICES"] == ",".join(command.gpus)
            by_layout.setdefault((command.topology, command.layout), set()).update(command.gpus)
        for (topology, layout), used in by_layout.items():
            gpus_declared = int(layout.removesuffix("gpu"))
            assert used <= {str(i) for i in range(n)}, (topology, layout, used)
            assert len(used) == gpus_declared, (topology, layout, used)


def test_gpu_tier_passes_hugging_face_settings_through(tmp_path, monkeypatch, plans):
    monkeypatch.setenv("HF_HOME", "/runner/hf-cache")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    for command in plans["gpu2"]:
        env = command.environment()
        assert env["HF_HOME"] == "/runner/hf-cache" and env["HF_TOKEN"] == "hf_secret"
        assert env["HF_HUB_OFFLINE"] == "1", "runs go offline against the pre-fetched cache"
        assert env["CUDA_VISIBLE_DEVICES"] == ",".join(command.gpus)
    for command in plans["cpu"]:
        env = command.environment()
        assert env["HF_HOME"] != "/runner/hf-cache" and env["HF_HUB_OFFLINE"] == "1"
        assert env["CUDA_VISIBLE_DEVICES"] == ""


def _masked_argv(command: WorkerCommand) -> list[str]:
    """Per-process and per-tier values (bootstrap port; the model: a row of the tier table)."""
    argv = list(command.dynamo_argv)
    for flag in ("--disaggregation-bootstrap-port", "--model-path", "--dist-init-addr"):
        if flag in argv:
            argv[argv.index(flag) + 1] = "<masked>"
    return argv


def _masked_env(command: WorkerCommand) -> dict[str, str]:
    """Per-process values (ports, scratch dir) aside."""
    return {k: v for k, v in command.env.items() if not k.endswith("_PORT") and k != "TMPDIR"}


def test_cpu_tier_runs_the_gpu_tiers_packed_command_line(plans):
    """Apart from the rows of the tier table, a CPU-tier worker runs the GPU command."""
    cpu = {(c.topology, c.role): c for c in plans["cpu"]}
    packed = [
        c for c in plans["gpu2"] if c.layout == CATALOGUE.topology(c.topology).gpu.packed.name
    ]
    assert len(packed) == len(cpu)
    tier_env = {
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_HOME",
        "CUDA_VISIBLE_DEVICES",
        "PYTHONPATH",  # the start-up hook's folder ("child processes" row)
        "HARNESS_STAND_INS",
    }
    for gpu_command in packed:
        cpu_command = cpu[(gpu_command.topology, gpu_command.role)]
        cpu_argv = _masked_argv(cpu_command)
        assert cpu_argv[-2:] == ["--device", "cpu"]
        assert cpu_argv[:-2] == _masked_argv(gpu_command)
        cpu_env, gpu_env = _masked_env(cpu_command), _masked_env(gpu_command)
        differing = {k for k in cpu_env.keys() | gpu_env.keys() if cpu_env.get(k) != gpu_env.get(k)}
        assert differing <= tier_env, differing
    assert {"engine", "device", "models", "Hugging Face env", "GPUs", "child processes"} <= {
        d.aspect for d in tier_differences()
    }


@pytest.mark.nightly
@pytest.mark.process  # the `parsed` fixture runs 1.6.1's parser in a child
def test_a_flag_that_1_6_1_rejects_is_reported(parsed):
    """The parse check can fail, for the right reason: 1.6.1's own argparse refuses an unknown
    flag and a bad mode (exit 2, its message naming them), not a crash of the parse script."""
    unknown_flag, bad_mode = parsed[("broken", 0)], parsed[("broken", 1)]
    for result in (unknown_flag, bad_mode):
        assert result.get("error") == "SystemExit: 2", result
    assert "unrecognized arguments: --no-such-flag" in unknown_flag["said"], unknown_flag
    assert "argument --disaggregation-mode: invalid choice: 'both'" in bad_mode["said"], bad_mode


@pytest.mark.nightly
@pytest.mark.process  # the `parsed` fixture runs 1.6.1's parser in a child
def test_a_model_name_missing_from_the_runners_cache_fails_to_parse(parsed):
    """The cache matters: a GPU command naming a model the cache does not hold is rejected."""
    result = parsed[("uncached", 0)]
    # Dynamo's fetch_model, offline, raises a bare Exception with this message (1.6.1).
    expected = f"Exception: Model snapshots for '{UNCACHED_MODEL}' not found in cache"
    assert result.get("error") == expected, result


@pytest.mark.nightly
@pytest.mark.process  # the `parsed` fixture runs 1.6.1's parser in a child
@pytest.mark.parametrize("plan", [*(f"gpu{n}" for n in GPU_COUNTS), "cpu"])
def test_every_worker_takes_the_start_path_it_declares(plan, plans, parsed):
    """Each command, parsed, selects (by main.worker()'s own dispatch conditions) a start path
    its catalogue worker declares: the coverage guard's declarations are true."""
    wrong = []
    for index, command in enumerate(plans[plan]):
        declared = CATALOGUE.topology(command.topology).worker(command.role).start_paths
        taken = parsed[(plan, index)].get("start_path")
        if taken not in declared:
            wrong.append(f"{command.topology}/{command.role}: takes {taken}, declares {declared}")
    assert not wrong, "\n".join(wrong)
