"""GPU-tier models: overrides, where a model is, the one clear error, fetching under a lock, and
`models fetch -m EXPR`: exactly the models of the scenarios the expression selects on this tier
and GPU count, with sizes; partial snapshots completed; a failure names the model."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from discovery_harness.model.catalogue import load
from discovery_harness.runtime import model_fetch, models
from discovery_harness.runtime.model_source import gpu_needs
from discovery_harness.runtime.models import BadModelOverride, MissingModels, ModelNeed
from discovery_harness_scenarios.catalogue import CATALOGUE, GPU_MODELS, by_name
from tests.hf_cache import cache_model
from tests.inner_pytest import run_cli

ROOT = Path(__file__).resolve().parent.parent
HARNESS = [sys.executable, "-m", "discovery_harness"]


@pytest.fixture
def hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    return home


def _tiny(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "config.json").write_text("{}")
    return source


def test_overrides_take_known_keys_only():
    defaults = {"text": "Qwen/Qwen3-0.6B"}
    assert models.apply_overrides(defaults, ["text=/models/qwen"]) == {"text": "/models/qwen"}
    with pytest.raises(BadModelOverride, match="unknown asset key 'diffusion'"):
        models.apply_overrides(defaults, ["diffusion=black-forest-labs/FLUX.1-schnell"])
    with pytest.raises(BadModelOverride, match="KEY=REF"):
        models.apply_overrides(defaults, ["Qwen/Qwen3-0.6B"])


def test_a_model_is_a_local_dir_or_a_snapshot_in_the_cache(hf_home, tmp_path):
    local = _tiny(tmp_path)
    assert models.locate(str(local)) == local
    assert models.locate(str(tmp_path / "absent")) is None
    assert models.locate("org/not-cached") is None
    snapshot = cache_model(hf_home, "org/cached", local)
    assert models.locate("org/cached") == snapshot
    assert models.hf_hub_cache() == hf_home / "hub"


def test_a_missing_model_names_topology_key_and_the_fix(hf_home, tmp_path):
    cache_model(hf_home, "org/cached", _tiny(tmp_path))
    needs = [ModelNeed("aggregated", "text", "org/cached"), ModelNeed("rerank", "rerank", "o/x")]
    with pytest.raises(MissingModels) as caught:
        models.require(needs)
    text = str(caught.value)
    assert "topology 'rerank', key 'rerank': o/x" in text
    assert "aggregated" not in text.split("fetch them first")[0]
    assert "python -m discovery_harness models fetch rerank" in text
    models.require(needs[:1])  # the cached one alone passes


def test_gpu_needs_follow_the_catalogue_and_overrides():
    catalogue = load()
    needs = gpu_needs(catalogue, ["mm-encode-p-d", "aggregated"], ["text=/m/t"])
    assert needs == [
        ModelNeed("mm-encode-p-d", "vision-language", catalogue.gpu_models["vision-language"]),
        ModelNeed("aggregated", "text", "/m/t"),
    ]


def _fake_download(hf_home: Path, source: Path, marker_dir: Path, fetchers: int = 1):
    """A download that records itself and, before it finishes, waits until `fetchers`
    processes have entered fetch: with two, the second is proven to run while the first holds
    the lock (a deadline, not a sleep, bounds the wait)."""

    def download(ref: str) -> str:
        (marker_dir / f"download-{os.getpid()}").write_text(ref)
        deadline = time.monotonic() + 60
        while len(list(marker_dir.glob("entered-*"))) < fetchers:
            assert time.monotonic() < deadline, "the other fetcher never entered fetch"
            time.sleep(0.01)
        return str(cache_model(hf_home, ref, source))

    return download


def test_fetch_downloads_each_model_once_and_then_finds_it(hf_home, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    download = _fake_download(hf_home, _tiny(tmp_path), markers, fetchers=0)
    needs = [ModelNeed("disaggregated", "text", "org/m"), ModelNeed("aggregated", "text", "org/m")]
    said: list[str] = []
    located = models.fetch(needs, say=said.append, download=download)
    assert located == {"org/m": models.locate("org/m")}
    assert len(list(markers.glob("download-*"))) == 1
    assert "aggregated/text, disaggregated/text" in said[0]
    models.fetch(needs, say=said.append, download=download)
    assert len(list(markers.glob("download-*"))) == 1 and "already available" in said[-1]


def _fetch_in_process(hf_home: str, source: str, markers: str) -> None:
    os.environ["HF_HOME"] = hf_home
    download = _fake_download(Path(hf_home), Path(source), Path(markers), fetchers=2)
    said: list[str] = []
    (Path(markers) / f"entered-{os.getpid()}").write_text("")
    models.fetch([ModelNeed("aggregated", "text", "org/m")], say=said.append, download=download)
    (Path(markers) / f"said-{os.getpid()}").write_text("\n".join(said))


def test_concurrent_fetches_download_once_under_the_lock(hf_home, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    source = _tiny(tmp_path)
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=_fetch_in_process, args=(str(hf_home), str(source), str(markers)))
        for _ in range(2)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    # Both were inside fetch while the one download ran (it waited for them); the other
    # fetcher, held on the lock meanwhile, found the model instead of downloading it.
    assert len(list(markers.glob("entered-*"))) == 2
    assert len(list(markers.glob("download-*"))) == 1
    said = sorted(p.read_text() for p in markers.glob("said-*"))
    assert [("downloading" in s, "already available" in s) for s in said] in (
        [(True, False), (False, True)],
        [(False, True), (True, False)],
    ), said
    assert (hf_home / "hub" / models.FETCH_LOCK_NAME).exists()


@pytest.mark.process
def test_models_cli_fetch_offline_fails_naming_what_is_missing(hf_home):
    result = run_cli("models", "fetch", "rerank", whole_env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BAAI/bge-reranker-v2-m3: download failed" in result.stdout
    assert "topology 'rerank', key 'rerank'" in result.stderr


def test_the_expression_selects_what_pytest_would_run():
    selected = model_fetch.selected_scenarios("e2e and gpu_1 and not nightly")
    names = {s.topology.name for s in selected}
    one_gpu = {t.name for t in CATALOGUE if any(p.gpus == 1 for p in t.gpu.placements)}
    expected = {name for name in one_gpu if not by_name(name).gpu.nightly}
    assert names == expected
    assert all(s.placement.gpus == 1 for s in selected)
    nightly = model_fetch.selected_scenarios("gpu_1 and nightly")
    expected_nightly = {t.name for t in CATALOGUE if t.gpu.nightly}
    assert {s.topology.name for s in nightly} == expected_nightly


def test_layouts_the_gpus_cannot_take_bring_no_models():
    nightly = model_fetch.selected_scenarios("gpu_1 and nightly")
    kept, skipped = model_fetch.runnable(nightly, 1, 24.0)
    assert "llm-diffusion" not in {s.topology.name for s in kept}
    assert any("llm-diffusion does not fit" in reason for reason in skipped)
    refs = {n.ref for n in model_fetch.needs_of(kept, load(), [])}
    assert GPU_MODELS["diffusion-llm"] not in refs and GPU_MODELS["video"] in refs


@pytest.mark.process
def test_dry_run_lists_only_those_models_with_sizes_and_fetches_nothing(hf_home):
    result = subprocess.run(
        [*HARNESS, "models", "fetch", "-m", "e2e and gpu_1 and not nightly", "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    listed = {line.split()[1].rstrip(":") for line in result.stdout.splitlines() if "GiB (" in line}
    wanted = {GPU_MODELS[k] for k in ("text", "embedding", "rerank", "vision-language", "lora")}
    assert listed == wanted, result.stdout
    assert "catalogue estimate" in result.stdout
    assert not list(hf_home.glob("hub/models--*")), "a dry run downloaded"


def test_a_partial_snapshot_is_not_taken_for_a_cached_one(hf_home, tmp_path):
    snapshot = cache_model(hf_home, "org/m", _tiny(tmp_path))
    assert models.locate("org/m") == snapshot
    blobs = snapshot.parent.parent / "blobs"
    blobs.mkdir()
    (blobs / "abc.incomplete").write_text("")
    assert models.incomplete(snapshot) == "1 blob(s) still .incomplete"
    assert models.locate("org/m") is None
    (blobs / "abc.incomplete").unlink()
    (snapshot / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"w": "model-00002-of-00002.safetensors"}})
    )
    assert "names missing shards: model-00002" in models.incomplete(snapshot)


def test_fetch_completes_a_snapshot_it_did_not_finish(hf_home, tmp_path):
    cache_model(hf_home, "org/m", _tiny(tmp_path))  # there, but never fetched to the end
    calls: list[str] = []

    def download(ref: str) -> str:
        calls.append(ref)
        return str(cache_model(hf_home, ref, _tiny(tmp_path)))

    said: list[str] = []
    models.fetch([ModelNeed("aggregated", "text", "org/m")], say=said.append, download=download)
    assert calls == ["org/m"] and "downloading" in said[0]
    models.fetch([ModelNeed("aggregated", "text", "org/m")], say=said.append, download=download)
    assert calls == ["org/m"] and "already available" in said[-1]


def test_a_failed_download_names_the_model_and_the_others_still_come(hf_home, tmp_path):
    def download(ref: str) -> str:
        if ref == "org/broken":
            raise OSError("connection reset")
        return str(cache_model(hf_home, ref, _tiny(tmp_path)))

    said: list[str] = []
    needs = [ModelNeed("a", "text", "org/broken"), ModelNeed("b", "rerank", "org/fine")]
    located = models.fetch(needs, say=said.append, download=download)
    assert set(located) == {"org/fine"}
    assert any(
        line.startswith("org/broken: download failed (kept what was fetched): OSError")
        for line in said
    ), said


def test_sizes_come_from_the_hub_when_it_answers_else_the_catalogue(monkeypatch):
    from types import SimpleNamespace

    import huggingface_hub

    files = [SimpleNamespace(size=2**30), SimpleNamespace(size=2**29), SimpleNamespace(size=None)]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(
        huggingface_hub.HfApi, "model_info", lambda *a, **k: SimpleNamespace(siblings=files)
    )
    assert model_fetch.model_size("org/m", {}).describe() == "1.5 GiB (the Hub)"

    def unreachable(*args, **kwargs):
        raise OSError("no route to host")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", unreachable)
    assert model_fetch.model_size("org/m", {"org/m": 3.0}).describe() == (
        "3.0 GiB (catalogue estimate)"
    )
    assert model_fetch.model_size("org/other", {}).describe() == "size unknown"
