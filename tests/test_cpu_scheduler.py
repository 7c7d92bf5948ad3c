"""The CPU tier's scheduler stand-in: its model obeys what a model's logprobs promise, the
real request path is left whole, and the recorded boundary check can fail."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from discovery_harness.runtime import tier
from discovery_harness_workers import scheduler_boundary
from discovery_harness_workers.cpu_scheduler import REPLY_TEXT, ReplyModel, candidate_logprob

pytestmark = pytest.mark.unit
WORKERS = Path(__file__).resolve().parents[1] / "workers"
# sglang's request path between Dynamo's handler and the scheduler: none of it is replaced.
REQUEST_PATH = {
    "generate_request",
    "_tokenize_one_request",
    "_handle_batch_request",
    "_handle_batch_output",
    "_wait_one_response",
    "abort_request",
    "handle_loop",
}


class _Tokenizer:
    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [len(word) + 10 for word in text.split()]


def test_the_current_stand_in_overrides_nothing_of_sglangs_request_path():
    for name in ("cpu_engine.py", "cpu_scheduler.py"):
        tree = ast.parse((WORKERS / name).read_text())
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert not defined & REQUEST_PATH, (name, defined & REQUEST_PATH)
        bases = {
            ast.unparse(base)
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
            for base in node.bases
        }
        assert not any("TokenizerManager" in base for base in bases), (name, bases)


def test_logprobs_are_sorted_at_most_zero_and_sum_to_at_most_one():
    ranked = [candidate_logprob(rank) for rank in range(20)]
    assert ranked == sorted(ranked, reverse=True) and ranked[0] < 0
    assert sum(math.exp(value) for value in ranked) <= 1.0


def test_the_model_replies_then_ends_and_ranks_its_choice_first():
    model = ReplyModel(_Tokenizer(), vocab_size=100, eos_token_id=2)
    reply = _Tokenizer().encode(REPLY_TEXT)
    produced = [model.next_token(i, ignore_eos=False) for i in range(len(reply) + 1)]
    assert produced == [*reply, 2]
    assert model.next_token(len(reply), ignore_eos=True) == reply[0]
    assert model.ranked(99, 3) == [99, 0, 1]
    assert model.logprob_of(99, 99) == candidate_logprob(0)
    assert model.logprob_of(0, 99) == candidate_logprob(1)


def test_a_changed_boundary_is_reported_field_by_field():
    recorded = {"BatchTokenIDOutput": ["rids", "output_ids"], "AbortReq": ["rid"]}
    now = {"BatchTokenIDOutput": ["rids", "output_token_ids"], "Gone": ["x"]}
    assert scheduler_boundary.differences(recorded, now) == [
        "AbortReq: gone from the boundary",
        "BatchTokenIDOutput: fields added ['output_token_ids'], removed ['output_ids']",
        "Gone: new at the boundary",
    ]
    assert scheduler_boundary.differences(recorded, {**recorded}) == []
    reordered = {**recorded, "BatchTokenIDOutput": ["output_ids", "rids"]}
    assert "reordered" in scheduler_boundary.differences(recorded, reordered)[0]


def test_a_part_the_tier_does_not_run_is_skipped_by_name():
    reason = tier.skip_reason(tier.CPU, ("kv-transfer",))
    assert reason is not None and reason.startswith("the cpu tier cannot judge KV transfer")
    assert tier.skip_reason(tier.GPU, ("kv-transfer", "model-numerics")) is None
    assert tier.skip_reason(tier.CPU, ("something-else",)) is None
