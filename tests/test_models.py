"""GPU-tier models: overrides, where a model is, the one clear error, and fetching under a lock."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.catalogue import load
from harness.model_source import gpu_needs
from harness.runtime import models
from harness.runtime.models import BadModelOverride, MissingModels, ModelNeed
from tests.hf_cache import cache_model

ROOT = Path(__file__).resolve().parent.parent


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
    assert "python -m harness models fetch rerank" in text
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


def test_models_cli_fetch_offline_fails_naming_what_is_missing(hf_home):
    result = subprocess.run(
        [sys.executable, "-m", "harness", "models", "fetch", "rerank"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BAAI/bge-reranker-v2-m3: download failed" in result.stdout
    assert "topology 'rerank', key 'rerank'" in result.stderr
