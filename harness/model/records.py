"""Typed views of Dynamo's discovery keys in etcd (layout measured on 1.6.1).

v1/instances/{ns}/{component}/{endpoint}/{id-hex}  -- written by serving an endpoint
v1/mdc/{ns}/{component}/{endpoint}/{id-hex}        -- the model card, written by registration
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

INSTANCES_PREFIX = "v1/instances/"
CARDS_PREFIX = "v1/mdc/"


@dataclass(frozen=True)
class Instance:
    key: str
    namespace: str
    component: str
    endpoint: str
    instance_id: int
    transport: str  # e.g. "127.0.0.1:25012/637da2367ed51109/ns/backend/generate"

    @property
    def tcp_port(self) -> int | None:
        host_port = self.transport.split("/", 1)[0]
        _, _, port = host_port.rpartition(":")
        return int(port) if port.isdigit() else None


@dataclass(frozen=True)
class ModelCard:
    key: str
    namespace: str
    component: str
    endpoint: str
    instance_id: int
    model_name: str
    model_type: str  # e.g. "Chat | Completions", "Empty", "Embedding"
    model_input: str  # "Tokens" | "Text"
    worker_type: str  # "aggregated" | "prefill" | "decode" | "encode"
    needs: tuple[tuple[str, ...], ...]  # OR of ANDs of worker types
    raw: dict[str, Any]
    lora_name: str | None = None  # a LoRA adapter's card: v1/mdc/.../{id-hex}/{lora}

    @property
    def runtime_data(self) -> dict[str, Any]:
        return dict((self.raw.get("runtime_config") or {}).get("runtime_data") or {})

    def describe(self) -> str:
        needs = " | ".join("+".join(group) for group in self.needs) or "-"
        return (
            f"{self.key} (model {self.model_name!r}, type {self.model_type!r}, "
            f"input {self.model_input}, worker_type {self.worker_type}, needs {needs})"
        )


def _path_parts(key: str, prefix: str) -> list[str] | None:
    if not key.startswith(prefix):
        return None
    parts = key[len(prefix) :].split("/")
    return parts if len(parts) >= 4 else None


def parse_instance(key: str, value: bytes) -> Instance | None:
    parts = _path_parts(key, INSTANCES_PREFIX)
    if parts is None:
        return None
    data = json.loads(value)
    transport = data.get("transport") or {}
    address = next(iter(transport.values()), "") if isinstance(transport, dict) else ""
    return Instance(
        key=key,
        namespace=parts[0],
        component=parts[1],
        endpoint=parts[2],
        instance_id=int(data.get("instance_id", int(parts[3], 16))),
        transport=str(address),
    )


def parse_card(key: str, value: bytes) -> ModelCard | None:
    parts = _path_parts(key, CARDS_PREFIX)
    if parts is None:
        return None
    data = json.loads(value)
    card = data.get("card_json") or {}
    needs = tuple(tuple(str(role) for role in group) for group in card.get("needs") or [])
    return ModelCard(
        key=key,
        namespace=parts[0],
        component=parts[1],
        endpoint=parts[2],
        instance_id=int(data.get("instance_id", int(parts[3], 16))),
        model_name=str(card.get("display_name", "")),
        # ModelType.Empty (internal workers) is an empty bit set and serialises as "".
        model_type=str(card.get("model_type") or "Empty"),
        model_input=str(card.get("model_input", "")),
        worker_type=str(card.get("worker_type", "")),
        needs=needs,
        raw=card,
        lora_name="/".join(parts[4:]) or None,
    )
