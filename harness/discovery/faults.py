"""Faults injected at the discovery level, for checks no worker fault can reach.

A card whose instance is gone cannot be produced by one worker (card and instance share a
lease), so the self-test writes one: a copy of a real card under an instance id no worker
owns, on a short lease of its own so it cleans itself up.
"""

from __future__ import annotations

from discovery_harness.discovery.observer import DiscoveryObserver
from discovery_harness.model.records import ModelCard

ORPHAN_LEASE_TTL_S = 60


def write_orphan_card(observer: DiscoveryObserver, card: ModelCard) -> str:
    """Write a copy of `card` for a non-existent instance; return its key."""
    orphan_id = card.instance_id ^ 0xDEAD
    key = f"v1/mdc/{card.namespace}/{card.component}/{card.endpoint}/{orphan_id:x}"
    state = observer.state()
    value = state.raw[card.key].replace(str(card.instance_id).encode(), str(orphan_id).encode())
    client = observer.client
    lease = client.lease(ORPHAN_LEASE_TTL_S)
    client.put(key, value, lease=lease)
    return key
