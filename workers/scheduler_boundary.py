"""The scheduler boundary the CPU stand-in answers on, field by field, against the installed
sglang: the request structs the TokenizerManager sends its scheduler, the output structs the
scheduler and detokenizer send back, and the parts of sglang's scheduler the stand-in reuses
(`Req`, the stream accumulator, the launch hooks). Each sglang release the stand-in was
reviewed against has its fields recorded in
`discovery_harness_workers.scheduler_boundary_record`; any field added, removed or moved is a
difference, so an sglang bump breaks here, loudly, before the stand-in drifts.

`python -m discovery_harness_workers.scheduler_boundary` prints the installed release's
fields as a record entry (after reviewing `cpu_scheduler.py` against the new release), and
with `--write` adds it to the record module.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

IO_STRUCTS = (
    "TokenizedGenerateReqInput",
    "BatchTokenizedGenerateReqInput",
    "TokenizedEmbeddingReqInput",
    "BatchTokenizedEmbeddingReqInput",
    "BatchTokenIDOutput",
    "BatchStrOutput",
    "BatchEmbeddingOutput",
    "AbortReq",
    "LoadLoRAAdapterReqInput",
    "UnloadLoRAAdapterReqInput",
    "LoRAUpdateOutput",
    "FlushCacheReqInput",
    "FlushCacheReqOutput",
    "ReleaseMemoryOccupationReqInput",
    "ReleaseMemoryOccupationReqOutput",
    "ResumeMemoryOccupationReqInput",
    "ResumeMemoryOccupationReqOutput",
)
# sglang parts the stand-in builds on, by dotted path.
REUSED = (
    "sglang.srt.managers.schedule_batch.Req.__init__",
    "sglang.srt.managers.schedule_batch.Req.update_finish_state",
    "sglang.srt.managers.schedule_batch.Req.set_finish_with_abort",
    "sglang.srt.managers.scheduler_components.output_streamer._GenerationStreamAccumulator",
    "sglang.srt.managers.scheduler_components.output_streamer._GenerationStreamAccumulator.accept",
    "sglang.srt.managers.scheduler_components.output_streamer._GenerationStreamAccumulator"
    ".to_payload",
    "sglang.srt.managers.scheduler_components.output_sender.SenderWrapper.send_output",
    "sglang.srt.managers.utils.validate_input_length",
    "sglang.srt.managers.detokenizer_manager.DetokenizerManager.__init__",
    "sglang.srt.managers.detokenizer_manager.DetokenizerManager.event_loop",
    "sglang.srt.entrypoints.engine.SchedulerInitResult",
    "sglang.srt.entrypoints.engine.Engine._launch_scheduler_processes",
    "sglang.srt.entrypoints.engine.Engine._launch_detokenizer_subprocesses",
)


def _load(path: str) -> Any:
    """A module attribute by dotted path, through nested classes."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            found = getattr(found, name)
        return found
    raise ImportError(path)


def fields_of(thing: Any) -> list[str]:
    """A struct's fields in order (msgspec or dataclass), or a callable's parameters."""
    if hasattr(thing, "__struct_fields__"):
        return list(thing.__struct_fields__)
    if dataclasses.is_dataclass(thing):
        return [field.name for field in dataclasses.fields(thing)]
    return list(inspect.signature(thing).parameters)


def installed() -> dict[str, list[str]]:
    """The boundary as the installed sglang has it."""
    from discovery_harness_workers import torchvision_shim

    torchvision_shim.apply()
    io_struct = importlib.import_module("sglang.srt.managers.io_struct")
    found = {name: fields_of(getattr(io_struct, name)) for name in IO_STRUCTS}
    found.update({path.removeprefix("sglang.srt."): fields_of(_load(path)) for path in REUSED})
    return found


def differences(recorded: dict[str, list[str]], now: dict[str, list[str]]) -> list[str]:
    """Every field added, removed or moved, per struct or callable."""
    problems = []
    for name in sorted(set(recorded) | set(now)):
        was, has = recorded.get(name), now.get(name)
        if was == has:
            continue
        if was is None or has is None:
            problems.append(f"{name}: {'new at' if was is None else 'gone from'} the boundary")
            continue
        added = [field for field in has if field not in was]
        removed = [field for field in was if field not in has]
        if added or removed:
            problems.append(f"{name}: fields added {added}, removed {removed}")
        else:
            problems.append(f"{name}: fields reordered ({was} -> {has})")
    return problems


def report() -> list[str]:
    """The installed sglang's boundary against the one recorded for its release."""
    from discovery_harness_workers.scheduler_boundary_record import RECORDED

    release = version("sglang")
    recorded = RECORDED.get(release)
    if recorded is None:
        return [
            f"sglang {release}: no scheduler boundary recorded (review "
            "workers/cpu_scheduler.py against it, then record it: python -m "
            "discovery_harness_workers.scheduler_boundary)"
        ]
    return [f"sglang {release}: {problem}" for problem in differences(recorded, installed())]


RECORD_HEADER = '''"""The scheduler boundary of each sglang release the CPU stand-in was
reviewed against (written by `python -m discovery_harness_workers.scheduler_boundary
--write`; checked by its `report`)."""

RECORDED: dict[str, dict[str, list[str]]] = '''


def main() -> None:
    entry = {version("sglang"): installed()}
    if "--write" not in sys.argv[1:]:
        print(json.dumps(entry, indent=4))
        return
    from discovery_harness_workers import scheduler_boundary_record

    recorded = {**scheduler_boundary_record.RECORDED, **entry}
    path = Path(scheduler_boundary_record.__file__)
    path.write_text(RECORD_HEADER + json.dumps(dict(sorted(recorded.items())), indent=4) + "\n")
    print(f"recorded sglang {version('sglang')} in {path}")


if __name__ == "__main__":
    main()
