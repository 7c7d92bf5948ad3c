"""GPU-tier models: where each one is, and fetching them into the Hugging Face cache first.

A reference is a local directory or a Hugging Face repo id. Workers resolve a repo id in the
cache themselves (Dynamo's `fetch_model`, sglang, transformers all read `$HF_HOME/hub`), so the
harness pre-downloads once (`python -m discovery_harness models fetch`) and then runs every worker
with
`HF_HUB_OFFLINE=1`: a run never downloads, and a model missing from the cache is one clear error
before any worker starts, naming the topology and asset key that need it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from discovery_harness.model.assets import ASSET_KEYS

FETCH_LOCK_NAME = ".harness-models-fetch.lock"
# Where `fetch` records each repo it downloaded to the end (the snapshot's revision): a
# snapshot directory alone may be an interrupted download.
COMPLETE_DIR = ".harness-complete"


class MissingModels(RuntimeError):
    """One or more GPU-tier models are neither a local directory nor in the HF cache."""


class BadModelOverride(ValueError):
    """A `--model` value that is not KEY=REF with a known asset key."""


@dataclass(frozen=True)
class ModelNeed:
    topology: str
    key: str  # asset key, see discovery_harness.model.assets.ASSET_KEYS
    ref: str  # Hugging Face repo id or local directory

    def describe(self) -> str:
        return f"topology '{self.topology}', key '{self.key}': {self.ref}"


def apply_overrides(defaults: dict[str, str], overrides: Iterable[str]) -> dict[str, str]:
    """The catalogue's models with `KEY=REF` overrides applied; a bad one is a usage error."""
    models = dict(defaults)
    for override in overrides:
        key, sep, ref = override.partition("=")
        if not sep or not ref:
            raise BadModelOverride(
                f"--model takes KEY=REF (a model name or path), not {override!r}"
            )
        if key not in ASSET_KEYS:
            raise BadModelOverride(
                f"--model {override!r}: unknown asset key {key!r}; known keys: "
                + ", ".join(ASSET_KEYS)
            )
        models[key] = ref
    return models


def hf_hub_cache() -> Path:
    """The cache directory workers read, by huggingface_hub's rules, from the environment now
    (huggingface_hub's own constants are frozen when it is first imported)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    home = os.environ.get("HF_HOME") or str(Path(xdg) / "huggingface")
    return Path(home).expanduser() / "hub"


def locate(ref: str) -> Path | None:
    """The local directory of a model: the path itself, or its snapshot in the HF cache."""
    path = Path(ref).expanduser()
    if path.is_dir():
        return path
    if path.is_absolute() or ref.startswith("."):
        return None  # a path that does not exist, never a repo id
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        snapshot = Path(snapshot_download(ref, local_files_only=True, cache_dir=hf_hub_cache()))
    except (LocalEntryNotFoundError, ValueError, OSError):
        return None
    # snapshot_download(local_files_only=True) takes an interrupted download for a cached one.
    return None if incomplete(snapshot) else snapshot


def incomplete(snapshot: Path) -> str | None:
    """Why a cached snapshot is not whole (a blob still downloading, a file whose blob is
    gone, a weight shard its index names but the snapshot lacks), or None."""
    repo = snapshot.parent.parent
    partial = sorted(p.name for p in (repo / "blobs").glob("*.incomplete"))
    if partial:
        return f"{len(partial)} blob(s) still .incomplete"
    files = [p for p in snapshot.rglob("*") if p.is_symlink() or p.is_file()]
    dangling = [p.name for p in files if not p.exists()]
    if dangling:
        return "files without their blob: " + ", ".join(sorted(dangling)[:3])
    for index in snapshot.glob("*.index.json"):
        try:
            shards = set(json.loads(index.read_text()).get("weight_map", {}).values())
        except (OSError, ValueError):
            return f"{index.name} is unreadable"
        absent = sorted(s for s in shards if not (snapshot / s).exists())
        if absent:
            return f"{index.name} names missing shards: " + ", ".join(absent[:3])
    return None


def _complete_marker(ref: str) -> Path:
    return hf_hub_cache() / COMPLETE_DIR / ref.replace("/", "--")


def fetched_whole(ref: str) -> Path | None:
    """The snapshot `fetch` downloaded to the end and that is still whole, else None."""
    found = locate(ref)
    marker = _complete_marker(ref)
    if found is None or Path(ref).expanduser().is_dir():
        return found
    if not marker.is_file() or marker.read_text().strip() != found.name:
        return None
    return found


def missing(needs: Iterable[ModelNeed]) -> list[ModelNeed]:
    return [need for need in needs if locate(need.ref) is None]


def require(needs: Iterable[ModelNeed]) -> None:
    """Raise MissingModels naming every topology and key whose model is not available."""
    absent = missing(needs)
    if not absent:
        return
    topologies = " ".join(sorted({n.topology for n in absent}))
    raise MissingModels(
        f"GPU-tier model(s) not in the Hugging Face cache {hf_hub_cache()} (workers run "
        "offline):\n"
        + "\n".join(f"  {n.describe()}" for n in absent)
        + f"\nfetch them first: python -m discovery_harness models fetch {topologies}"
        + "\n(or point a key at a local directory: --model KEY=/path/to/model)"
    )


def fetch(
    needs: Iterable[ModelNeed],
    *,
    say: Callable[[str], None] = print,
    download: Callable[[str], str] | None = None,
) -> dict[str, Path]:
    """Download every model not yet available, one download at a time across processes
    (a file lock in the cache), with Hugging Face's progress bars; HF_TOKEN is honoured.
    Returns each reference's local directory."""
    from filelock import FileLock

    download = download or _snapshot_download
    by_ref: dict[str, list[ModelNeed]] = {}
    for need in needs:
        by_ref.setdefault(need.ref, []).append(need)
    cache = hf_hub_cache()
    cache.mkdir(parents=True, exist_ok=True)
    located: dict[str, Path] = {}
    for ref, users in by_ref.items():
        who = ", ".join(sorted({f"{n.topology}/{n.key}" for n in users}))
        with FileLock(str(cache / FETCH_LOCK_NAME)):
            found = fetched_whole(ref)
            if found is not None:
                say(f"{ref}: already available at {found} ({who})")
                located[ref] = found
                continue
            # Anything else, a partial snapshot included, goes to the hub's own download,
            # which keeps what is there and fetches the rest.
            say(f"{ref}: downloading into {cache} ({who})")
            started = time.monotonic()
            try:
                snapshot = Path(download(ref))
                problem = incomplete(snapshot) if snapshot.is_dir() else "no snapshot"
                if problem:
                    raise RuntimeError(f"the snapshot is not whole: {problem}")
            except Exception as error:  # keeps what was fetched; require() names what is missing
                say(
                    f"{ref}: download failed (kept what was fetched): "
                    f"{type(error).__name__}: {error}"
                )
                continue
            located[ref] = snapshot
            if not Path(ref).expanduser().is_dir():
                _complete_marker(ref).parent.mkdir(parents=True, exist_ok=True)
                _complete_marker(ref).write_text(snapshot.name)
            say(f"{ref}: done in {time.monotonic() - started:.0f} s -> {snapshot}")
    return located


def _snapshot_download(ref: str) -> str:
    from huggingface_hub import snapshot_download

    return snapshot_download(ref, cache_dir=hf_hub_cache(), token=os.environ.get("HF_TOKEN"))
