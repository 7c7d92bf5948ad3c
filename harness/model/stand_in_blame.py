"""A violation whose words name the harness's own CPU stand-ins is the harness's failure, not
Dynamo's: a stand-in class in an error Dynamo passed on ("'LegacyCpuTokenizerManager' object
has no attribute 'lora_update_lock'"), or a stand-in module in a traceback. It is reported as
`stand-in-failed`, worded as a harness error that points at the stand-in and its drift check,
so neither a person nor `bisect` takes it for a Dynamo regression. (Injected faults live in
discovery_harness_workers/faults.py and bad_answers.py: those are Dynamo-shaped on purpose.)"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from discovery_harness.model.violations import STAND_IN_FAILED, Violation

_STAND_IN = re.compile(
    r"\b(?:Legacy)?Cpu(?:TokenizerManager|Engine|Scheduler|DetokenizerThread|MMEncoder\w*"
    r"|LegacyMMEncoder|DiffGenerator|Connector|VisionTower)\b"
    r"|discovery_harness_workers[/.](?:cpu_engine|cpu_scheduler|legacy_stand_ins|legacy_encoder"
    r"|stand_in_generation|cpu_sglang|torchvision_shim|release_stand_ins|zygote)\b"
)
WHERE = (
    "workers/cpu_engine.py and workers/cpu_scheduler.py (sglang 0.5.21), "
    "workers/legacy_stand_ins.py and "
    "workers/legacy_encoder.py (older releases); check them against the installed sglang with "
    "`python -m discovery_harness_workers.drift` in the release's environment"
)


def stand_in_named(violation: Violation) -> str | None:
    """The stand-in the violation's message or evidence names, if any."""
    match = _STAND_IN.search(violation.message) or _STAND_IN.search(violation.evidence)
    return match.group(0) if match else None


def reclassify(violations: Iterable[Violation]) -> list[Violation]:
    """Each violation that names a stand-in, as the harness's own failure."""
    found = []
    for violation in violations:
        name = stand_in_named(violation)
        if name is None or violation.kind == STAND_IN_FAILED:
            found.append(violation)
            continue
        found.append(
            dataclasses.replace(
                violation,
                kind=STAND_IN_FAILED,
                message=f"harness error, not Dynamo's: the CPU stand-in {name} failed where "
                f"Dynamo called it (reported as [{violation.kind}]): {violation.message}\n"
                f"  fix the stand-in: {WHERE}",
            )
        )
    return found
