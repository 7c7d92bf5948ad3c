"""A violation naming the harness's own stand-in is the harness's failure: worded as such,
never set aside as a Dynamo finding, and unjudgeable for bisect."""

from __future__ import annotations

import pytest

from discovery_harness.bisect.oracle import Unjudgeable, violation_keys
from discovery_harness.history.record import ItemFindings
from discovery_harness.model.stand_in_blame import reclassify, stand_in_named
from discovery_harness.model.violations import LORA_REFUSED, STAND_IN_FAILED, Violation

pytestmark = pytest.mark.unit

REFUSED = Violation(
    LORA_REFUSED,
    "decode",
    "worker 'decode' (pid 7) refused load_lora harness-lora: Dynamo answered 500: "
    "{\"message\":\"'LegacyCpuTokenizerManager' object has no attribute 'lora_update_lock'\"}",
)


def test_a_stand_ins_error_passed_on_by_dynamo_is_the_harnesss():
    (own,) = reclassify([REFUSED])
    assert own.kind == STAND_IN_FAILED and own.role == "decode"
    assert own.message.startswith(
        "harness error, not Dynamo's: the CPU stand-in LegacyCpuTokenizerManager failed"
    )
    assert "(reported as [lora-refused])" in own.message and "drift" in own.message


def test_a_traceback_through_a_stand_in_module_is_the_harnesss_but_an_injected_fault_is_not():
    through = Violation(
        "error-for-listed-model",
        None,
        "1 error",
        evidence=('  File "/tmp/x/discovery_harness_workers/cpu_engine.py", line 70, in generate'),
    )
    assert stand_in_named(through) == "discovery_harness_workers/cpu_engine"
    injected = Violation(
        "error-for-listed-model",
        None,
        "1 error",
        evidence=('  File "/tmp/x/discovery_harness_workers/faults.py", line 249, in generate'),
    )
    assert reclassify([injected]) == [injected]
    dynamo = Violation(LORA_REFUSED, "prefill", "Dynamo answered 500: lifecycle role is Prefill")
    assert reclassify([dynamo]) == [dynamo]


def test_bisect_cannot_judge_a_commit_by_a_run_whose_stand_in_failed():
    (own,) = reclassify([REFUSED])
    item = ItemFindings("failed", violations=[{"kind": own.kind, "message": own.message}])
    with pytest.raises(Unjudgeable):
        violation_keys({"lora-p-d": item})
