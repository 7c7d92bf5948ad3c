"""What an embedding or rerank answer must be (the pooling models' APIs); see
harness.serving.answers for the text kinds and the shared `Asked`."""

from __future__ import annotations

from typing import Any

from harness.serving.answers import Asked, is_number


def embedding(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = [] if data.get("object") == "list" else [f"object {data.get('object')!r}"]
    if data.get("model") != asked.model:
        problems.append(f"model {data.get('model')!r}, expected {asked.model!r}")
    items = data.get("data") or []
    if len(items) != len(asked.inputs):
        return [*problems, f"{len(items)} embeddings for {len(asked.inputs)} inputs"]
    indices = [item.get("index") for item in items]
    if indices != list(range(len(items))):
        problems.append(f"indices {indices}, expected {list(range(len(items)))} (input order)")
    if any(item.get("object") != "embedding" for item in items):
        problems.append("an item whose object is not 'embedding'")
    vectors = [item.get("embedding") for item in items]
    if not all(isinstance(v, list) and v and all(map(is_number, v)) for v in vectors):
        return [*problems, "an embedding that is not a non-empty list of numbers"]
    dimensions = sorted({len(v) for v in vectors})
    if len(dimensions) != 1:
        problems.append(f"embeddings of dimensions {dimensions}, expected one")
    if len(set(asked.inputs)) == len(asked.inputs) and len({tuple(v) for v in vectors}) < len(
        vectors
    ):
        problems.append("distinct inputs got identical embeddings")
    usage = data.get("usage") or {}
    prompt = usage.get("prompt_tokens")
    if not (isinstance(prompt, int) and prompt > 0 and (usage.get("total_tokens") or 0) >= prompt):
        problems.append(f"usage {usage!r}: expected prompt_tokens > 0 <= total_tokens")
    return problems


def rerank(data: Any, asked: Asked) -> list[str]:
    results = data if isinstance(data, list) else (data or {}).get("results")
    if not isinstance(results, list):
        return ["no list of results"]
    wanted = min(asked.top_n or len(asked.documents), len(asked.documents))
    problems = [] if len(results) == wanted else [f"{len(results)} results, expected {wanted}"]
    indices = [r.get("index") for r in results]
    if not all(isinstance(i, int) and 0 <= i < len(asked.documents) for i in indices):
        problems.append(f"indices {indices}, expected positions 0..{len(asked.documents) - 1}")
    elif len(set(indices)) != len(indices):
        problems.append(f"indices {indices} repeat a document")
    else:
        for result in results:
            document = result.get("document")
            text = document.get("text") if isinstance(document, dict) else document
            if text is not None and text != asked.documents[result["index"]]:
                problems.append(f"result for index {result['index']} carries document {text!r}")
    scores = [r.get("relevance_score", r.get("score")) for r in results]
    if not all(map(is_number, scores)):
        problems.append(f"scores {scores}, expected numbers")
    elif scores != sorted(scores, reverse=True):
        problems.append(f"scores {scores} not best first")
    return problems
