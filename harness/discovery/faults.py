"""Faults injected at the discovery level, for checks no worker fault can reach.

A card whose instance is gone cannot be produced by one worker (card and instance share a
lease), so the self-test writes one: a copy of a real card under an instance id no worker
owns, on a short lease of its own so it cleans itself up.
"""

from __future__ import annotations

import json

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


def rewrite_card_needs(
    observer: DiscoveryObserver, card: ModelCard, needs: list[list[str]]
) -> tuple[str, bytes]:
    """Rewrite `card` in place (same key, same lease: it still goes with its worker) with other
    `needs`: what a worker re-registering its card with new content does. Dynamo 1.6.1's
    frontend keeps the card it first read (measured), so its /ready then disagrees with etcd.
    Returns the key and the value written."""
    client = observer.client
    value, meta = client.get(card.key)
    if value is None:
        raise LookupError(f"card {card.key} is not in etcd")
    data = json.loads(value)
    data["card_json"]["needs"] = needs
    written = json.dumps(data).encode()
    client.put(card.key, written, lease=meta.lease_id)
    return card.key, written
