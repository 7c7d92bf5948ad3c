"""Self-tests of the answer checks (harness/serving/answers.py and beside it): a worker that
registers right and answers 200 with a wrong answer is caught, with a violation naming the
role, the request kind, its shape and what was wrong. Each fault (workers/bad_answers.py)
breaks one promise of one kind's API, those judged against the model too (its prompt token
counts, embedding dimension, context length); the promises a worker cannot break (the
frontend's SSE framing, ids, usage chunk, stop sequences, base64 encoding) are shown failing
on hand-made answers in tests/test_answers.py. One representative case runs by default
(pre_merge); all of them with `-m selftest`."""

from __future__ import annotations

import pytest

from discovery_harness.model.violations import BAD_CONTENT, WRONG_CARD, ContractFailure
from discovery_harness.plugin import topology_param
from discovery_harness.serving.requests import IMAGE_SIZE
from discovery_harness.serving.shapes import DEFAULT, LISTING
from discovery_harness_scenarios.catalogue import (
    AGGREGATED,
    EMBEDDING_TOPOLOGY,
    IMAGE_DIFFUSION,
    RERANK_TOPOLOGY,
    VIDEO_GENERATION,
)

pytestmark = [pytest.mark.selftest, pytest.mark.e2e, pytest.mark.sglang, pytest.mark.gpu_0]

REPRESENTATIVE = "bad-answer-embedding-order"
EMBED, RERANK = (EMBEDDING_TOPOLOGY, "embedding"), (RERANK_TOPOLOGY, "rerank")
IMAGE, VIDEO = (IMAGE_DIFFUSION, "image-diffusion"), (VIDEO_GENERATION, "video-generation")
TEXT = (AGGREGATED, "worker")
# case -> (fault, (topology, the role it is injected into), kind, shape, what the violation
# says); a case's id is its fault's name unless one fault breaks a promise of several kinds.
CASES = {
    "bad-answer-empty-text": ("", TEXT, "chat", DEFAULT, "empty message content"),
    "bad-answer-overlong": ("", TEXT, "completion", DEFAULT, "completion_tokens"),
    "bad-answer-embedding-count": ("", EMBED, "embedding", DEFAULT, "1 embeddings for 2 inputs"),
    "bad-answer-embedding-order": (
        "",
        EMBED,
        "embedding",
        DEFAULT,
        "indices [1, 0], expected [0, 1]",
    ),
    "bad-answer-embedding-dimension": ("", EMBED, "embedding", DEFAULT, "dimensions [63, 64]"),
    "bad-answer-rerank-order": ("", RERANK, "rerank", DEFAULT, "not best first"),
    "bad-answer-rerank-top-n": ("", RERANK, "rerank", DEFAULT, "3 results, expected 2"),
    "bad-answer-rerank-index": ("", RERANK, "rerank", DEFAULT, "expected positions 0..2"),
    "bad-answer-image-size": (
        "",
        IMAGE,
        "image",
        DEFAULT,
        f"image 0 is 16x16, asked for {IMAGE_SIZE}",
    ),
    "bad-answer-image-format": ("", IMAGE, "image", DEFAULT, "image 0 is not a PNG, JPEG or WebP"),
    "bad-answer-video-format": ("", VIDEO, "video", DEFAULT, "video is not an MP4"),
    "bad-answer-video-status": (
        "",
        VIDEO,
        "video",
        DEFAULT,
        "status 'in_progress', expected 'completed'",
    ),
    # Judged against the model (its config and tokenizer), in the shapes beyond the default:
    "bad-answer-prompt-tokens": (
        "",
        TEXT,
        "chat-stream",
        "include-usage",  # the usage chunk of a stream, counted as the chat template makes it
        "usage.prompt_tokens 19, expected 18 (the messages under the model's chat template",
    ),
    "bad-answer-prompt-tokens-completion": (
        "bad-answer-prompt-tokens",
        TEXT,
        "completion",
        "max-tokens-1",
        "usage.prompt_tokens 3, expected 2 (the prompt under the model's tokenizer)",
    ),
    "bad-answer-prompt-tokens-embedding": (
        "bad-answer-prompt-tokens",
        EMBED,
        "embedding",
        "token-ids",
        "usage.prompt_tokens 5, expected 4 (the inputs under the model's tokenizer",
    ),
    "bad-answer-embedding-model-dimension": (
        "",
        EMBED,
        "embedding",
        "base64",
        "embeddings of dimension 63, expected 64",
    ),
    "bad-answer-embedding-dimensions-ignored": (
        "",
        EMBED,
        "embedding",
        "dimensions",
        "embeddings of dimension 64, expected 8",
    ),
    "bad-answer-rerank-documents": (
        "",
        RERANK,
        "rerank",
        "top-n-above",
        "carries no document",
    ),
    "bad-answer-image-count": ("", IMAGE, "image", "size", "0 images, expected n=1"),
}


def _cases() -> list[object]:
    cases = []
    for case, (fault, (topology, role), kind, shape, says) in CASES.items():
        mark = pytest.mark.pre_merge if case == REPRESENTATIVE else pytest.mark.nightly
        param = topology_param(topology, mark, pytest.mark.timeout(240))
        values = (topology, role, kind, shape, fault or case, says)
        cases.append(pytest.param(*values, id=case, marks=param.marks))
    return cases


@pytest.mark.parametrize(("topology", "role", "kind", "shape", "fault", "says"), _cases())
def test_a_wrong_answer_with_status_200_is_caught(topology, role, kind, shape, fault, says, deploy):
    deployment = deploy(topology, strict=True, faults={role: fault})
    reply = deployment.send(kind, shape=shape)
    assert reply.status == 200, reply.describe()  # the answer, not the status, is wrong
    with pytest.raises(ContractFailure) as failure:
        deployment.verify()
    found = failure.value.find(BAD_CONTENT, role)
    assert found, str(failure.value)
    message = found[0].message
    wanted = f"{kind} answer (shape {shape}) of worker '{role}'"
    assert wanted in message and "broke its API: 200, but " in message, message
    assert says in message, message
    # The cause beside it: the request's id and the worker the frontend routed it to.
    evidence = found[0].evidence
    assert "-> 200: " in evidence and "(x-request-id harness-" in evidence, evidence
    assert f"served by worker '{role}' (pid " in evidence, evidence


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_bad_answer_context_length_is_caught(deploy):
    """A card registered with a context length that is not its model's: the card (in etcd)
    and the listing the frontend makes of it (GET /v1/models) are both caught."""
    deployment = deploy(AGGREGATED, strict=True, faults={"worker": "bad-answer-context-length"})
    deployment.send(LISTING)
    with pytest.raises(ContractFailure) as failure:
        deployment.verify()
    wanted = "context_length 1000, expected 4096 (the model's: config.json max_position_embeddings"
    card = failure.value.find(WRONG_CARD, "worker")
    assert card and wanted in card[0].message, str(failure.value)
    listing = failure.value.find(BAD_CONTENT, "worker")
    says = "listing answer (shape default) of worker 'worker' broke its API: 200, but "
    assert listing and says in listing[0].message, str(failure.value)
    assert "context_window 1000, expected 4096" in listing[0].message, listing[0].message
