"""A Hugging Face hub cache laid out by hand: `$HF_HOME/hub/models--org--name/snapshots/<rev>`
plus `refs/main`, the layout huggingface_hub and Dynamo's own fetcher read offline."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path


def cache_model(hf_home: Path, repo_id: str, source: Path) -> Path:
    """Put a copy of `source` in the cache under `repo_id`; returns the snapshot dir."""
    repo = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    revision = hashlib.sha1(repo_id.encode()).hexdigest()
    snapshot = repo / "snapshots" / revision
    shutil.copytree(source, snapshot, dirs_exist_ok=True)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return snapshot
