"""Load the topology catalogue by module name: `harness` never imports `scenarios` itself.

The pytest plugin and the CLI both take the catalogue from configuration (the
`harness_catalogue` ini option or HARNESS_CATALOGUE; default
`discovery_harness_scenarios.catalogue`), so
another project can point the harness at its own catalogue.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field

from discovery_harness.model.topology import Topology
from discovery_harness.model.validation import CatalogueError, catalogue_problems

DEFAULT_CATALOGUE = "discovery_harness_scenarios.catalogue"


@dataclass(frozen=True)
class Catalogue:
    topologies: tuple[Topology, ...]
    gpu_models: dict[str, str] = field(default_factory=dict)  # asset key -> HF name or path
    # dynamo.sglang start paths no topology takes, with the reason (see
    # discovery_harness.judge.coverage)
    start_path_exemptions: dict[str, str] = field(default_factory=dict)
    # model reference -> its download size (GiB) where the Hub cannot be asked: an estimate
    model_sizes_gib: dict[str, float] = field(default_factory=dict)

    def topology(self, name: str) -> Topology:
        for topology in self.topologies:
            if topology.name == name:
                return topology
        known = ", ".join(t.name for t in self.topologies)
        raise KeyError(f"unknown topology {name!r}; the catalogue has: {known}")

    def select(self, names: list[str] | None) -> tuple[Topology, ...]:
        return tuple(self.topology(n) for n in names) if names else self.topologies


def load(name: str | None = None) -> Catalogue:
    """The catalogue module `name` (default: HARNESS_CATALOGUE, else the project's), checked:
    CatalogueError lists every broken invariant (see discovery_harness.model.validation)."""
    module_name = name or os.environ.get("HARNESS_CATALOGUE", DEFAULT_CATALOGUE)
    module = importlib.import_module(module_name)
    catalogue = Catalogue(
        tuple(module.CATALOGUE),
        dict(getattr(module, "GPU_MODELS", {})),
        dict(getattr(module, "START_PATH_EXEMPTIONS", {})),
        dict(getattr(module, "GPU_MODEL_SIZES_GIB", {})),
    )
    problems = catalogue_problems(catalogue.topologies, catalogue.gpu_models)
    if problems:
        raise CatalogueError(f"'{module_name}'", problems)
    return catalogue
