"""The harness's own bad input, each one clear usage error before anything starts.

An unknown role or fault in --inject-fault used to be ignored (the run passed, injecting
nothing); a missing GPU model surfaced as a failure per test; a missing etcd binary as an
error per test. Each check here returns the problem as one message, or None.
"""

from __future__ import annotations

from collections.abc import Iterable

from discovery_harness.model.catalogue import Catalogue
from discovery_harness.model.topology import Topology
from discovery_harness.processes.infra import InfraUnavailable, select_provider
from discovery_harness.runtime.models import MissingModels, ModelNeed, apply_overrides, require


def injected_faults(pairs: Iterable[str], catalogue: Catalogue) -> dict[str, str]:
    """--inject-fault ROLE=FAULT values, checked against the catalogue's roles and the
    launcher's faults; raises ValueError naming what is unknown and what exists."""
    # the launcher's vocabulary (stdlib-only module)
    from discovery_harness_workers.faults import FAULTS

    roles = sorted({w.role for t in catalogue.topologies for w in t.workers})
    faults: dict[str, str] = {}
    for pair in pairs:
        role, sep, fault = pair.partition("=")
        if not sep or not role or not fault:
            raise ValueError(f"--inject-fault takes ROLE=FAULT, not {pair!r}")
        if role not in roles:
            raise ValueError(
                f"--inject-fault {pair!r}: no topology has a role {role!r}; roles: "
                + ", ".join(roles)
            )
        if fault not in FAULTS:
            raise ValueError(
                f"--inject-fault {pair!r}: unknown fault {fault!r}; faults: " + ", ".join(FAULTS)
            )
        faults[role] = fault
    return faults


def missing_gpu_models(
    topologies: Iterable[Topology], catalogue: Catalogue, overrides: list[str]
) -> str | None:
    """The GPU tier's models the selected topologies need and the cache lacks."""
    refs = apply_overrides(catalogue.gpu_models, overrides)
    needs = [
        ModelNeed(topology.name, key, refs[key])
        for topology in topologies
        for key in topology.asset_keys
    ]
    try:
        require(needs)
    except MissingModels as missing:
        return str(missing)
    return None


def unavailable_infra(choice: str) -> str | None:
    """Why etcd and NATS cannot be had the way `choice` asks (a missing binary, no engine,
    unset endpoints)."""
    try:
        select_provider(choice)
    except InfraUnavailable as unavailable:
        return str(unavailable)
    return None
