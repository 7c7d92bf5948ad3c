"""Hand-made discovery state for the unit tests of the contract checks."""

from __future__ import annotations

import json
from dataclasses import dataclass

from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.model.contract import ExpectedCard

NS = "h-unit-abc123"


@dataclass
class FakeWorker:
    role: str
    component: str
    expected: ExpectedCard | None
    pid: int = 4242
    tcp_port: int | None = 25012
    registrants: int = 1
    start_paths: tuple[str, ...] = ("init_decode",)
    internal_endpoint: bool = False


def instance_entry(component: str, instance_id: int, port: int, host: str = "127.0.0.1"):
    key = f"v1/instances/{NS}/{component}/generate/{instance_id:x}"
    value = {
        "type": "Endpoint",
        "component": component,
        "endpoint": "generate",
        "namespace": NS,
        "instance_id": instance_id,
        "transport": {"tcp": f"{host}:{port}/{instance_id:x}/{NS}/{component}/generate"},
    }
    return key, json.dumps(value).encode()


def card_entry(component: str, instance_id: int, **card: object):
    key = f"v1/mdc/{NS}/{component}/generate/{instance_id:x}"
    body = {
        "display_name": "model-x",
        "model_type": "Chat | Completions",
        "model_input": "Tokens",
        "worker_type": "aggregated",
        "needs": [],
        "model_info": {"hf_config_json": {"path": "http://127.0.0.1:25011/v1/metadata/x"}},
    }
    body.update(card)
    value = {
        "type": "Model",
        "namespace": NS,
        "component": component,
        "endpoint": "generate",
        "instance_id": instance_id,
        "card_json": body,
    }
    return key, json.dumps(value).encode()


def state(*entries: tuple[str, bytes]) -> DiscoveryState:
    return DiscoveryState(dict(entries))
