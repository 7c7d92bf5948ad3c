"""What the frontend says about the deployments found: its listing, each found or listed
model's `/ready` answer, its `/health` and (only with --probe) one real request of each kind
the cards declare."""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from discovery_harness.audit.observe import Unreachable
from discovery_harness.common.tls import shared_context
from discovery_harness.judge.discovered import AuditedDeployment, FrontendView
from discovery_harness.serving.http_client import RecordingClient
from discovery_harness.serving.listing import listed_ids
from discovery_harness.serving.requests import Reply, send

# A card's model type -> the request that exercises it (multimodal: an image chat).
KIND_OF_TYPE = {
    "Chat": "chat",
    "Completions": "completion",
    "Embedding": "embedding",
    "Rerank": "rerank",
    "Images": "image",
    "Videos": "video",
}


def read_frontend(url: str, deployments: Sequence[AuditedDeployment], probe: bool) -> FrontendView:
    try:
        with httpx.Client(base_url=url, timeout=10.0, verify=shared_context()) as client:
            listed = listed_ids(client.get("/v1/models").json())
            ready = {}
            # Every model discovery holds, listed or not: /ready must agree with etcd on both.
            for model in sorted(set(listed) | {d.model for d in deployments if d.model}):
                answer = client.get(f"/v1/models/{model}/ready")
                ready[model] = (answer.status_code, answer.text)
            health = client.get("/health").json()
    except (httpx.HTTPError, ValueError) as error:
        raise Unreachable(f"frontend at {url} does not answer GET /v1/models: {error}") from None
    answers: dict[str, list[Reply]] = {}
    recording = RecordingClient(url)
    try:
        for deployment in deployments if probe else ():
            if deployment.model in listed:
                answers[deployment.model] = [
                    send(kind, recording, deployment.model) for kind in kinds_for(deployment)
                ]
    finally:
        recording.close()
    return FrontendView(listed, ready, answers, health, tuple(recording.exchanges))


def kinds_for(deployment: AuditedDeployment) -> list[str]:
    """The recognised topology's requests, else one per model type its public cards declare."""
    topology = deployment.recognition.topology
    if topology is not None:
        return list(topology.requests)
    kinds: list[str] = []
    image = any(w.card and w.card.worker_type == "encode" for w in deployment.workers)
    for worker in deployment.workers:
        for part in worker.card.model_type.split("|") if worker.card else []:
            kind = KIND_OF_TYPE.get(part.strip())
            if kind == "chat" and image:
                kind = "chat-image"
            if kind and kind not in kinds:
                kinds.append(kind)
    return kinds
