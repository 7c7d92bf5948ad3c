"""Self-tests of the answer checks (harness/serving/answers.py): a worker that registers right and
answers 200 with a wrong answer is caught, with a violation naming the role, the request kind
and what was wrong. Each fault (workers/bad_answers.py) breaks one promise of one kind's API;
the promises a worker cannot break (the frontend's SSE framing, ids) are shown failing on
hand-made answers in tests/test_answers.py. One representative case runs by default
(pre_merge); all of them with `-m selftest`."""

from __future__ import annotations

import pytest

from discovery_harness.model.violations import BAD_CONTENT, ContractFailure
from discovery_harness.plugin import topology_param
from discovery_harness.serving.requests import IMAGE_SIZE
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
# fault -> ((topology, the role it is injected into), request kind, what the violation says)
CASES = {
    "bad-answer-empty-text": ((AGGREGATED, "worker"), "chat", "empty message content"),
    "bad-answer-overlong": ((AGGREGATED, "worker"), "completion", "completion_tokens"),
    "bad-answer-embedding-count": (EMBED, "embedding", "1 embeddings for 2 inputs"),
    "bad-answer-embedding-order": (EMBED, "embedding", "indices [1, 0], expected [0, 1]"),
    "bad-answer-embedding-dimension": (EMBED, "embedding", "embeddings of dimensions [15, 16]"),
    "bad-answer-rerank-order": (RERANK, "rerank", "not best first"),
    "bad-answer-rerank-top-n": (RERANK, "rerank", "3 results, expected 2"),
    "bad-answer-rerank-index": (RERANK, "rerank", "expected positions 0..2"),
    "bad-answer-image-size": (IMAGE, "image", f"image 0 is 16x16, asked for {IMAGE_SIZE}"),
    "bad-answer-image-format": (IMAGE, "image", "image 0 is not a PNG, JPEG or WebP"),
    "bad-answer-video-format": (VIDEO, "video", "video is not an MP4"),
    "bad-answer-video-status": (VIDEO, "video", "status 'in_progress', expected 'completed'"),
}


def _cases() -> list[object]:
    cases = []
    for fault, ((topology, role), kind, says) in CASES.items():
        mark = pytest.mark.pre_merge if fault == REPRESENTATIVE else pytest.mark.nightly
        param = topology_param(topology, mark, pytest.mark.timeout(240))
        cases.append(pytest.param(topology, role, kind, fault, says, id=fault, marks=param.marks))
    return cases


@pytest.mark.parametrize(("topology", "role", "kind", "fault", "says"), _cases())
def test_a_wrong_answer_with_status_200_is_caught(topology, role, kind, fault, says, deploy):
    deployment = deploy(topology, strict=True, faults={role: fault})
    reply = deployment.send(kind)
    assert reply.status == 200, reply.describe()  # the answer, not the status, is wrong
    with pytest.raises(ContractFailure) as failure:
        deployment.verify()
    found = failure.value.find(BAD_CONTENT, role)
    assert found, str(failure.value)
    message = found[0].message
    assert f"{kind} answer of worker '{role}' broke its API: 200, but " in message, message
    assert says in message, message
