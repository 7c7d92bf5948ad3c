"""A worker's self-description judged on recorded state: its metrics' model labels, its card's
runtime_config against its flags, and a LoRA card against its base card. The cards' runtime
configs are the ones 1.6.1 wrote on the CPU tier (lora-p-d's decode worker and its LoRA)."""

from __future__ import annotations

import json

import pytest

from discovery_harness.judge import self_description as judged
from discovery_harness.judge.verdict import set_aside_known
from discovery_harness.model.contract import CHAT_COMPLETIONS, ExpectedCard
from discovery_harness.model.records import parse_card
from discovery_harness.model.violations import (
    LORA_WITHOUT_RUNTIME_DATA,
    METRICS_MODEL_LABEL,
    RUNTIME_CONFIG_MISMATCH,
)
from discovery_harness.serving.metrics import MetricsRead, model_labels
from discovery_harness_scenarios.catalogue import (
    AGGREGATED,
    LORA_P_D,
    LORA_WITHOUT_GENERATE_CAPABILITY,
)
from tests.fakes import NS, FakeWorker, card_entry

pytestmark = pytest.mark.unit

DECODE = FakeWorker(
    "decode",
    "backend",
    ExpectedCard(model_type=CHAT_COMPLETIONS, model_input="Tokens", worker_type="decode"),
)
# lora-p-d's decode worker as the harness starts it (the flags that reach the card).
DECODE_ARGV = (
    "--served-model-name", "lora-p-d-538096",
    "--disaggregation-mode", "decode",
    "--page-size", "16",
    "--max-running-requests", "2",
    "--max-prefill-tokens", "4096",
    "--max-total-tokens", "65536",
    "--enable-lora",
    "--max-loras-per-batch", "2",
)  # fmt: skip
TOKEN_BUDGET = {"combined_limit": 4096, "reject_prompt_overflow": True,
                "reject_total_overflow": True}  # fmt: skip
# The decode worker's base card's runtime_config, as 1.6.1 wrote it (structural-tag fields
# left out).
BASE_CONFIG = {
    "data_parallel_size": 1,
    "data_parallel_start_rank": 0,
    "disaggregated_endpoint": {"bootstrap_host": "127.0.0.1", "bootstrap_port": 31491},
    "enable_local_indexer": False,
    "max_gpu_lora_count": 2,
    "max_num_batched_tokens": 4096,
    "max_num_seqs": 2,
    "reasoning_parser": None,
    "tool_call_parser": None,
    "total_kv_blocks": 4096,
    "runtime_data": {
        "disagg_prefill_cancel_anytime_v1": True,
        "sglang_generate": True,
        "token_budget": TOKEN_BUDGET,
    },
}
# Its LoRA card's, as 1.6.1's load_lora wrote it: no sglang_generate, no max_gpu_lora_count.
LORA_CONFIG = {
    **{k: v for k, v in BASE_CONFIG.items() if k != "max_gpu_lora_count"},
    "runtime_data": {"disagg_prefill_cancel_anytime_v1": True, "token_budget": TOKEN_BUDGET},
}


def _card(config: dict | None, lora: str | None = None):
    fields = {"display_name": "lora-p-d-538096"}
    if config is not None:
        fields["runtime_config"] = config
    key, value = card_entry("backend", 7, **fields)
    if lora is not None:
        key += f"/{lora}"
    card = parse_card(key, value)
    assert card is not None
    return card


def test_the_recorded_card_agrees_with_its_flags():
    assert judged.runtime_config_violations(DECODE, _card(BASE_CONFIG), DECODE_ARGV) == []


def test_a_parser_the_flags_set_but_the_card_lacks_is_a_mismatch():
    argv = (*DECODE_ARGV, "--dyn-tool-call-parser", "hermes", "--dyn-reasoning-parser=qwen3")
    [violation] = judged.runtime_config_violations(DECODE, _card(BASE_CONFIG), argv)
    assert violation.kind == RUNTIME_CONFIG_MISMATCH and violation.role == "decode"
    assert "worker 'decode' (pid 4242, start path init_decode)" in violation.message
    assert 'tool_call_parser null, expected "hermes" (--dyn-tool-call-parser hermes)' in (
        violation.message
    )
    assert 'reasoning_parser null, expected "qwen3"' in violation.message
    assert f"card:     v1/mdc/{NS}/backend/generate/7" in violation.message


def test_data_parallel_ranks_and_lora_slots_follow_the_flags():
    config = {**BASE_CONFIG, "data_parallel_size": 2, "max_gpu_lora_count": 8}
    [violation] = judged.runtime_config_violations(DECODE, _card(config), DECODE_ARGV)
    assert "data_parallel_size 2, expected 1 (no --dp-size)" in violation.message
    assert "max_gpu_lora_count 8, expected 2 (--max-loras-per-batch 2)" in violation.message
    without_lora = [a for a in DECODE_ARGV if a != "--enable-lora"]
    [violation] = judged.runtime_config_violations(DECODE, _card(BASE_CONFIG), without_lora)
    assert "max_gpu_lora_count 2, expected null (LoRA not enabled)" in violation.message


def test_an_unset_sglang_flag_is_not_judged_but_an_unset_dynamo_flag_is():
    """sglang resolves its own defaults (8 running requests for a diffusion LLM); Dynamo's
    parser flags, absent, leave the card's parsers null."""
    argv = ("--page-size", "16")
    config = {**BASE_CONFIG, "max_num_seqs": 8, "max_gpu_lora_count": None}
    assert judged.runtime_config_violations(DECODE, _card(config), argv) == []
    config["tool_call_parser"] = "hermes"
    [violation] = judged.runtime_config_violations(DECODE, _card(config), argv)
    assert 'tool_call_parser "hermes", expected null (no --dyn-tool-call-parser)' in (
        violation.message
    )


def test_the_kv_pool_is_held_to_its_bounds_never_to_a_number():
    capped = (*DECODE_ARGV, "--max-total-tokens", "1024")  # the last one counts: 64 blocks
    [violation] = judged.runtime_config_violations(DECODE, _card(BASE_CONFIG), capped)
    assert "total_kv_blocks 4096, expected at most 64" in violation.message
    missing = {**BASE_CONFIG, "total_kv_blocks": None}
    [violation] = judged.runtime_config_violations(DECODE, _card(missing), DECODE_ARGV)
    assert "total_kv_blocks null, expected the engine's KV pool" in violation.message
    encoder = FakeWorker("mm-encoder", "encode", None,
                         start_paths=("init_multimodal_encode_worker",))  # fmt: skip
    no_engine = {**missing, "max_gpu_lora_count": None}
    assert judged.runtime_config_violations(encoder, _card(no_engine), ()) == []


METRICS = """\
# HELP dynamo_component_requests_total Total requests
# TYPE dynamo_component_requests_total counter
dynamo_component_requests_total{dynamo_endpoint="generate",model="lora-p-d-538096"} 3
# HELP dynamo_component_total_blocks KV blocks
# TYPE dynamo_component_total_blocks gauge
dynamo_component_total_blocks{dynamo_component="backend",model="/models/tiny-qwen3"} 4096
# HELP dynamo_embedding_batch_size Batch size
# TYPE dynamo_embedding_batch_size gauge
dynamo_embedding_batch_size{model="lora-p-d-538096",model_name="/models/tiny-qwen3"} 1
# HELP dynamo_component_uptime_seconds Uptime
# TYPE dynamo_component_uptime_seconds gauge
dynamo_component_uptime_seconds{dynamo_component="backend"} 12
"""


def test_model_labels_are_read_from_the_exposition():
    labels, samples = model_labels(METRICS)
    assert samples == 4
    seen = {(label.name, label.value): label.series for label in labels}
    assert seen[("model", "lora-p-d-538096")] == (
        "dynamo_component_requests_total",
        "dynamo_embedding_batch_size",
    )
    assert seen[("model", "/models/tiny-qwen3")] == ("dynamo_component_total_blocks",)
    assert seen[("model_name", "/models/tiny-qwen3")] == ("dynamo_embedding_batch_size",)


def test_a_series_labelled_with_another_model_is_caught():
    labels, samples = model_labels(METRICS)
    read = MetricsRead("http://127.0.0.1:25011/metrics", 200, "", labels, samples)
    [violation] = judged.metrics_violations(DECODE, "lora-p-d-538096", read)
    assert violation.kind == METRICS_MODEL_LABEL and violation.role == "decode"
    assert "worker 'decode' (pid 4242, start path init_decode)" in violation.message
    assert "expected: model='lora-p-d-538096' on every series of http://127.0.0.1:25011" in (
        violation.message
    )
    assert "model='/models/tiny-qwen3' on 1 series (dynamo_component_total_blocks)" in (
        violation.message
    )
    assert "model_name='/models/tiny-qwen3'" in violation.message
    right = MetricsRead(read.url, 200, "", labels[:1], 1)
    assert judged.metrics_violations(DECODE, labels[0].value, right) == []


def test_the_1_6_1_lora_card_lacks_only_the_generate_capability_and_is_known():
    [violation] = judged.lora_violations(
        DECODE, _card(BASE_CONFIG), _card(LORA_CONFIG, "harness-lora")
    )
    assert violation.kind == LORA_WITHOUT_RUNTIME_DATA
    assert "runtime_data lacks ['sglang_generate']" in violation.message
    assert f"v1/mdc/{NS}/backend/generate/7/harness-lora" in violation.message
    assert violation.shape == LORA_WITHOUT_GENERATE_CAPABILITY.shape
    verdict = set_aside_known([violation], LORA_P_D.known_violations, "1.6.1")
    assert not verdict.violations and verdict.known


def test_a_lora_card_without_runtime_data_is_never_excused():
    """The #14862 shape (the lora-card-bare fault): parsers and budget gone, not only the
    capability 1.6.1 is known to leave out."""
    [violation] = judged.lora_violations(DECODE, _card(BASE_CONFIG), _card(None, "harness-lora"))
    assert "runtime_data lacks ['disagg_prefill_cancel_anytime_v1', 'sglang_generate', " in (
        violation.message
    )
    assert "total_kv_blocks null (base 4096)" in violation.message
    assert violation.shape is None
    verdict = set_aside_known([violation], LORA_P_D.known_violations, "1.6.1")
    assert verdict.violations == (violation,)


def test_a_lora_card_with_its_base_runtime_data_passes():
    same = json.loads(json.dumps(BASE_CONFIG))
    assert judged.lora_violations(DECODE, _card(BASE_CONFIG), _card(same, "lora")) == []


def test_only_the_release_it_was_measured_on_is_held_to_it():
    assert AGGREGATED.self_description_judged and LORA_P_D.self_description_judged
    assert not AGGREGATED.for_release("1.5.1").self_description_judged
    assert not AGGREGATED.for_release("0.7.1").self_description_judged
