"""A worker's self-description agrees with its card. Pure: the metrics reads and etcd's cards
observed; this judges.

A worker describes itself in three places besides its card's role: the model labels of its
Prometheus series (dashboards and autoscalers group by them; upstream #8035 was a label naming
another model), its card's `runtime_config` (what the frontend routes and parses by: tool and
reasoning parsers, KV capacity, data-parallel ranks, LoRA slots), and each LoRA card's runtime
data (upstream #14862: adapters registered without their base's parsers). Only what the
worker's flags decide is judged; what the engine measures (its KV pool) is held to its bounds,
never to a number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from discovery_harness.common.argv import flag_value, int_flag
from discovery_harness.judge.checks import WorkerView, named
from discovery_harness.model.records import ModelCard
from discovery_harness.model.violations import (
    LORA_WITHOUT_RUNTIME_DATA,
    METRICS_MODEL_LABEL,
    RUNTIME_CONFIG_MISMATCH,
    Violation,
    lora_shape,
)
from discovery_harness.serving.metrics import MetricsRead

# Flags 1.6.1's get_runtime_config (dynamo/sglang/register.py lines 490-622) copies into the
# card's runtime_config: field, flag. An absent Dynamo flag (str) leaves the field null; an
# absent sglang flag is judged not at all (sglang's own resolution may set a value).
COPIED = (
    ("tool_call_parser", "--dyn-tool-call-parser", str),  # line 539
    ("reasoning_parser", "--dyn-reasoning-parser", str),  # line 538
    ("context_length", "--context-length", int),  # line 507
)
MAX_RUNNING = "--max-running-requests"  # max_num_seqs per rank (capacity.py)
MAX_PREFILL = "--max-prefill-tokens"  # max_num_batched_tokens when given
MAX_LORAS = "--max-loras-per-batch"  # max_gpu_lora_count (register.py lines 240-248)
DP_SIZE, ATTENTION_DP = "--dp-size", ("--enable-dp-attention", "--attn-dp-size")
LORA_FLAGS = ("--enable-lora", "--lora-paths")
MAX_TOTAL_TOKENS, PAGE_SIZE = "--max-total-tokens", "--page-size"
# Start paths whose registration passes serves_lora_load=True (init_llm.py): only these
# advertise a LoRA slot budget.
LORA_SERVING_PATHS = ("init_decode", "init_prefill", "gateway_child")
# Start paths that register without an sglang engine (get_runtime_config's engine is None, or
# a diffusion worker's card without runtime data): no KV pool to publish.
NO_ENGINE_PATHS = ("init_multimodal_encode_worker", "init_image_diffusion", "init_video_diffusion")
# Runtime-config fields a LoRA card must carry as its base card does: the parsers of #14862,
# and what the router sizes by (1.6.1's load_lora rebuilds them with get_runtime_config).
LORA_RUNTIME_FIELDS = (
    "tool_call_parser",
    "reasoning_parser",
    "total_kv_blocks",
    "max_num_seqs",
    "max_num_batched_tokens",
    "data_parallel_start_rank",
    "data_parallel_size",
    "context_length",
)


@dataclass(frozen=True)
class Expected:
    """One runtime_config field as the worker's flags set it."""

    field: str
    value: Any
    source: str  # the flag and its value, or what its absence means

    def describe(self) -> str:
        return f"{json.dumps(self.value)} ({self.source})"


def _given(flag: str, value: Any) -> str:
    return f"{flag} {value}" if value is not None else f"no {flag}"


def expected_runtime(argv: Sequence[str], start_paths: Sequence[str]) -> list[Expected]:
    """What the worker's flags set in its card's runtime_config (Dynamo 1.6.1)."""
    expected = []
    for field, flag, kind in COPIED:
        raw = flag_value(argv, flag)
        if raw is None and kind is int:  # sglang's flag: absent, sglang may resolve one
            continue
        value = kind(raw) if raw is not None and (kind is str or raw.isdigit()) else None
        expected.append(Expected(field, value, _given(flag, raw)))
    if not any(flag in argv or flag_value(argv, flag) for flag in ATTENTION_DP):
        # Attention DP splits the ranks per node: not the flag's number alone.
        dp = int_flag(argv, DP_SIZE)
        expected += [
            Expected("data_parallel_size", dp or 1, _given(DP_SIZE, dp)),
            Expected("data_parallel_start_rank", 0, _given(DP_SIZE, dp)),
        ]
        running = int_flag(argv, MAX_RUNNING)  # absent: sglang's own default (8 for a dLLM)
        if running is not None:
            expected.append(Expected("max_num_seqs", running, _given(MAX_RUNNING, running)))
    prefill = int_flag(argv, MAX_PREFILL)
    if prefill is not None:
        expected.append(Expected("max_num_batched_tokens", prefill, _given(MAX_PREFILL, prefill)))
    lora = any(flag in argv for flag in LORA_FLAGS)
    serves_lora = any(p.split("/")[0] in LORA_SERVING_PATHS for p in start_paths)
    loras = int_flag(argv, MAX_LORAS)
    if not lora or not serves_lora:
        why = "LoRA not enabled" if not lora else "its start path serves no load_lora"
        expected.append(Expected("max_gpu_lora_count", None, why))
    elif loras is not None:
        expected.append(Expected("max_gpu_lora_count", loras, _given(MAX_LORAS, loras)))
    return expected


def kv_blocks_cap(argv: Sequence[str]) -> int | None:
    """The most KV blocks the flags allow (sglang caps its pool at --max-total-tokens:
    mem_cache/kv_cache_configurator.py, _apply_token_constraints)."""
    tokens = int_flag(argv, MAX_TOTAL_TOKENS)
    if tokens is None:
        return None
    page = int_flag(argv, PAGE_SIZE) or 1
    return -(-tokens // page)


def has_engine(start_paths: Sequence[str]) -> bool:
    return not any(p.split("/")[0] in NO_ENGINE_PATHS for p in start_paths)


def _kv_problem(config: Mapping[str, Any], engine: bool, cap: int | None) -> str | None:
    blocks = config.get("total_kv_blocks")
    if blocks is None:
        return "total_kv_blocks null, expected the engine's KV pool in blocks" if engine else None
    if not engine:
        return f"total_kv_blocks {json.dumps(blocks)}, expected null (no engine)"
    if not isinstance(blocks, int) or isinstance(blocks, bool) or blocks <= 0:
        return f"total_kv_blocks {json.dumps(blocks)}, expected a positive count"
    if cap is not None and blocks > cap:
        return (
            f"total_kv_blocks {blocks}, expected at most {cap} ({MAX_TOTAL_TOKENS} / {PAGE_SIZE})"
        )
    return None


def runtime_config_violations(
    worker: WorkerView, card: ModelCard, argv: Sequence[str]
) -> list[Violation]:
    """Each field of the card's runtime_config that says other than the worker's flags, and a
    KV pool that is missing (a worker with an engine), not a positive count, or larger than
    its flags allow."""
    config: Mapping[str, Any] = card.raw.get("runtime_config") or {}
    paths = worker.start_paths
    problems = [
        f"{e.field} {json.dumps(config.get(e.field))}, expected {e.describe()}"
        for e in expected_runtime(argv, paths)
        if config.get(e.field) != e.value
    ]
    kv = _kv_problem(config, has_engine(paths), kv_blocks_cap(argv))
    problems += [kv] if kv else []
    if not problems:
        return []
    return [
        Violation(
            RUNTIME_CONFIG_MISMATCH,
            worker.role,
            f"{named(worker)} registered a card whose runtime_config says other than its "
            f"flags: the frontend parses and routes by the card\n"
            f"  card:     {card.key}\n"
            f"  seen:     " + "\n            ".join(problems),
        )
    ]


def metrics_violations(worker: WorkerView, card_model: str, read: MetricsRead) -> list[Violation]:
    """Every model label of the worker's series names the model its card serves (series with
    no model label are not judged: 1.6.1's image and video workers export none)."""
    foreign = [label for label in read.labels if label.value != card_model]
    if not foreign:
        return []
    seen = "; ".join(
        f"{label.name}={label.value!r} on {len(label.series)} series "
        f"({', '.join(label.series[:3])}{', …' if len(label.series) > 3 else ''})"
        for label in foreign
    )
    return [
        Violation(
            METRICS_MODEL_LABEL,
            worker.role,
            f"{named(worker)} labels its metrics with another model than its card's: "
            f"dashboards and autoscalers keyed by model count it elsewhere\n"
            f"  expected: model={card_model!r} on every series of {read.url}\n"
            f"  seen:     {seen}",
        )
    ]


def lora_violations(worker: WorkerView, base: ModelCard, lora: ModelCard) -> list[Violation]:
    """A LoRA card carries its base card's runtime data: every key of `runtime_data` with the
    same value, and the runtime fields the frontend parses and routes by."""
    base_config = base.raw.get("runtime_config") or {}
    lora_config = lora.raw.get("runtime_config") or {}
    base_data, lora_data = base.runtime_data, lora.runtime_data
    missing = sorted(k for k in base_data if k not in lora_data)
    differs = sorted(k for k in base_data if k in lora_data and lora_data[k] != base_data[k])
    fields = [f for f in LORA_RUNTIME_FIELDS if lora_config.get(f) != base_config.get(f)]
    if not (missing or differs or fields):
        return []
    seen = [f"runtime_data lacks {missing}"] if missing else []
    seen += [f"runtime_data differs at {differs}"] if differs else []
    seen += [
        f"{f} {json.dumps(lora_config.get(f))} (base {json.dumps(base_config.get(f))})"
        for f in fields
    ]
    only_missing = missing and not differs and not fields
    return [
        Violation(
            LORA_WITHOUT_RUNTIME_DATA,
            worker.role,
            f"{named(worker)} published LoRA card {lora.key} without its base card's runtime "
            f"data: requests for the adapter lose what the base model's get (parsers, routing "
            f"capabilities)\n"
            f"  expected: as its base card {base.key}: runtime_data keys {sorted(base_data)}\n"
            f"  seen:     " + "; ".join(seen),
            shape=lora_shape(missing) if only_missing else None,
        )
    ]
