"""What an embedding or rerank answer must be (the pooling models' APIs); see
discovery_harness.serving.answers for the text kinds and the shared `Asked`.

- embedding: `object` list, `model`, one item per input in input order (`data[i].index` = i,
  `object` embedding), vectors non-empty, numeric, of the model's dimension (its hidden size,
  or the `dimensions` asked for), distinct for distinct inputs; with `encoding_format`
  base64 each vector is base64 of little-endian float32s; `usage.prompt_tokens` the inputs'
  length under the model's tokenizer (token ids: their count), total_tokens >= it.
- rerank: min(top_n, documents) results, best first, each `index` a distinct position in the
  documents, a numeric `score` (`relevance_score`); with `return_documents` each carries the
  document at its index, without it none does.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

from discovery_harness.serving.answers import Asked, is_number, prompt_tokens


def _vector(value: Any, encoding: str) -> tuple[list[float] | None, str | None]:
    """The numbers of one embedding in the encoding the request asked for."""
    if encoding != "base64":
        if isinstance(value, list) and value and all(map(is_number, value)):
            return value, None
        return None, "an embedding that is not a non-empty list of numbers"
    if not isinstance(value, str):
        return None, f"an embedding of {type(value).__name__}, asked for base64"
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None, "an embedding that is not base64"
    if not raw or len(raw) % 4:
        return None, f"a base64 embedding of {len(raw)} bytes, not float32s"
    floats = list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if not all(map(math.isfinite, floats)):
        return None, "a base64 embedding holding a non-finite float"
    return floats, None


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
    decoded = [_vector(item.get("embedding"), asked.encoding) for item in items]
    broken = [problem for _, problem in decoded if problem]
    if broken:
        return [*problems, broken[0]]
    vectors = [vector for vector, _ in decoded if vector is not None]
    dimensions = sorted({len(v) for v in vectors})
    if len(dimensions) != 1:
        problems.append(f"embeddings of dimensions {dimensions}, expected one")
    elif asked.dimension is not None and dimensions != [asked.dimension]:
        problems.append(f"embeddings of dimension {dimensions[0]}, expected {asked.dimension}")
    distinct = {repr(i) for i in asked.inputs}
    if len(distinct) == len(asked.inputs) and len({tuple(v) for v in vectors}) < len(vectors):
        problems.append("distinct inputs got identical embeddings")
    usage = data.get("usage") or {}
    prompt = usage.get("prompt_tokens")
    if not (isinstance(prompt, int) and prompt > 0 and (usage.get("total_tokens") or 0) >= prompt):
        problems.append(f"usage {usage!r}: expected prompt_tokens > 0 <= total_tokens")
    return problems + prompt_tokens(prompt, asked)


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
        problems += _documents(results, asked)
    scores = [r.get("relevance_score", r.get("score")) for r in results]
    if not all(map(is_number, scores)):
        problems.append(f"scores {scores}, expected numbers")
    elif scores != sorted(scores, reverse=True):
        problems.append(f"scores {scores} not best first")
    return problems


def _documents(results: list[dict[str, Any]], asked: Asked) -> list[str]:
    """Each result's document: the one at its index when asked for, none otherwise."""
    problems = []
    for result in results:
        document = result.get("document")
        text = document.get("text") if isinstance(document, dict) else document
        if not asked.return_documents:
            if document is not None:
                problems.append(
                    f"result for index {result['index']} carries a document, not asked for"
                )
        elif text is None:
            problems.append(f"result for index {result['index']} carries no document")
        elif text != asked.documents[result["index"]]:
            problems.append(f"result for index {result['index']} carries document {text!r}")
    return problems
