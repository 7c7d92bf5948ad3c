"""The verdict on the bad inputs a deployment was sent (discovery_harness.serving.bad_input):
each answered other than a 4xx with an error body, and each kind whose ordinary request failed
right after them (the worker stopped serving). Pure: the replies carry their judgement."""

from __future__ import annotations

from collections.abc import Sequence

from discovery_harness.model.violations import BAD_INPUT_ANSWER, Violation
from discovery_harness.serving.requests import AFTER_BAD_INPUT, BAD_INPUT, Reply


def violations(replies: Sequence[Reply], role: str, pipeline: str) -> list[Violation]:
    """`role`: the worker the frontend routes the model to; `pipeline`: who is behind it."""
    found = [
        Violation(
            BAD_INPUT_ANSWER,
            role,
            f"bad input {r.label} to worker '{role}'{pipeline}: {r.problem}; the API promises "
            f"a 4xx with an error body; POST {r.path} -> {r.status}",
            shape=r.label,
        )
        for r in replies
        if r.purpose == BAD_INPUT and not r.ok
    ]
    found += [
        Violation(
            BAD_INPUT_ANSWER,
            role,
            f"worker '{role}'{pipeline} stopped serving after bad input: its ordinary "
            f"{r.kind} request right after the bad inputs got {r.status} ({r.problem}); "
            f"POST {r.path}",
            shape=f"{r.kind}[after-bad-input]",
        )
        for r in replies
        # A 200 whose content is wrong is judged as any answer (bad-response-content).
        if r.purpose == AFTER_BAD_INPUT and r.status != 200
    ]
    return found
