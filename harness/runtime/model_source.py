"""Where each worker's model comes from, per tier.

CPU tier: tiny local directories of the real models' architectures, generated once per
session (nothing is downloaded). GPU tier: the catalogue's GPU_MODELS (Hugging Face names or
local paths) with `--model KEY=REF` overrides; a model must already be in the Hugging Face
cache (`python -m discovery_harness models fetch`), so a worker never downloads during a run, and a
missing one is one clear error naming the topology and key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from discovery_harness.model.assets import cpu_assets
from discovery_harness.model.catalogue import Catalogue, load
from discovery_harness.runtime.models import ModelNeed, apply_overrides, locate, require
from discovery_harness.runtime.tier import TierPolicy

TINY_DESCRIPTION = "tiny local dirs of each real model's architecture (generated, none downloaded)"


class ModelSource(Protocol):
    def path_for(self, topology: str, key: str) -> str: ...

    def describe(self) -> str: ...


@dataclass
class TinyModels:
    root: Path
    _paths: dict[str, Path] = field(default_factory=dict)

    def path_for(self, topology: str, key: str) -> str:
        if not self._paths:
            self._paths = cpu_assets(self.root)
        return str(self._paths[key])

    def describe(self) -> str:
        return TINY_DESCRIPTION


@dataclass(frozen=True)
class CachedModels:
    refs: dict[str, str]  # asset key -> HF name or local path
    require_cached: bool = True  # False only for plans, which start nothing

    def path_for(self, topology: str, key: str) -> str:
        """The reference as given (Dynamo resolves a name in the cache, offline); raises
        MissingModels when it is not there."""
        ref = self.refs[key]
        if self.require_cached:
            require([ModelNeed(topology, key, ref)])
        return ref

    def describe(self) -> str:
        return ", ".join(
            f"{key}={ref} ({'cached' if locate(ref) else 'NOT in the cache'})"
            for key, ref in self.refs.items()
        )


def model_source(tier: TierPolicy, overrides: list[str], root: Path) -> ModelSource:
    """CPU tier: tiny dirs generated under `root`; GPU tier: the catalogue's models."""
    if tier.tiny_models:
        return TinyModels(root)
    return gpu_models(overrides)


def gpu_models(overrides: list[str], require_cached: bool = True) -> CachedModels:
    return CachedModels(apply_overrides(load().gpu_models, overrides), require_cached)


def describe_models(tier: TierPolicy, overrides: list[str]) -> str:
    return TINY_DESCRIPTION if tier.tiny_models else gpu_models(overrides).describe()


def gpu_needs(
    catalogue: Catalogue, topologies: list[str] | None, overrides: list[str]
) -> list[ModelNeed]:
    """Every (topology, asset key, model) the GPU tier would run for these topologies."""
    refs = apply_overrides(catalogue.gpu_models, overrides)
    return [
        ModelNeed(topology.name, key, refs[key])
        for topology in catalogue.select(topologies)
        for key in topology.asset_keys
    ]
