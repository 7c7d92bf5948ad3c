"""What the CPU stand-ins assume about sglang and Dynamo, checked against what is installed.

`python -m workers.drift` prints one line per difference and exits 1 if there is any: a
stand-in whose signature no longer matches the class it replaces, or a name the stand-ins
or the fault injection rely on that the installed release no longer has. An upgrade then
breaks loudly here instead of the stand-in silently drifting from the real thing.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from typing import Any


def parameters(fn: Callable[..., Any]) -> list[tuple[str, str]]:
    """Names and kinds of a callable's parameters (annotations and defaults ignored)."""
    return [(p.name, p.kind.name) for p in inspect.signature(fn).parameters.values()]


def compare_signatures(
    label: str, real: Callable[..., Any], stand_in: Callable[..., Any]
) -> list[str]:
    want, have = parameters(real), parameters(stand_in)
    if want == have:
        return []
    return [f"{label}: real {want} != stand-in {have}"]


def missing_attributes(label: str, owner: Any, names: list[str]) -> list[str]:
    return [f"{label} has no attribute {name!r}" for name in names if not hasattr(owner, name)]


def _load(path: str) -> Any:
    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def report() -> list[str]:
    from workers import torchvision_shim

    torchvision_shim.apply()
    from workers import cpu_engine as stand_ins

    engine = _load("sglang.srt.entrypoints.engine.Engine")
    tokenizer_manager = _load("sglang.srt.managers.tokenizer_manager.TokenizerManager")
    encoder = _load("sglang.srt.disaggregation.encoder.server.MMEncoder")
    diffusion = _load("sglang.multimodal_gen.runtime.entrypoints.diffusion_generator.DiffGenerator")
    problems: list[str] = []
    pairs = [
        ("Engine.__init__", engine.__init__, stand_ins.CpuEngine.__init__),
        ("Engine.shutdown", engine.shutdown, stand_ins.CpuEngine.shutdown),
        (
            "TokenizerManager.generate_request",
            tokenizer_manager.generate_request,
            stand_ins.CpuTokenizerManager.generate_request,
        ),
        (
            "TokenizerManager.abort_request",
            tokenizer_manager.abort_request,
            stand_ins.CpuTokenizerManager.abort_request,
        ),
        ("MMEncoder.__init__", encoder.__init__, stand_ins.CpuMMEncoder.__init__),
        (
            "MMEncoder._prepare_encode_context",
            encoder._prepare_encode_context,
            stand_ins.CpuMMEncoder._prepare_encode_context,
        ),
        (
            "MMEncoder._compute_embedding",
            encoder._compute_embedding,
            stand_ins.CpuMMEncoder._compute_embedding,
        ),
        (
            "DiffGenerator.from_pretrained",
            diffusion.from_pretrained,
            stand_ins.CpuDiffGenerator.from_pretrained,
        ),
        ("DiffGenerator.generate", diffusion.generate, stand_ins.CpuDiffGenerator.generate),
    ]
    for label, real, stand_in in pairs:
        problems += compare_signatures(label, real, stand_in)
    # What the stand-ins call or keep from the real classes.
    problems += missing_attributes(
        "Engine",
        engine,
        [
            "async_generate",
            "async_encode",
            "_ensure_event_loop",
            "server_args_class",
        ],
    )
    problems += missing_attributes(
        "TokenizerManager",
        tokenizer_manager,
        [
            "pause_generation",
            "continue_generation",
            "release_memory_occupation",
            "resume_memory_occupation",
        ],
    )
    problems += missing_attributes(
        "ServerArgs", _load("sglang.srt.server_args.ServerArgs"), ["resolve_once"]
    )
    problems += missing_attributes(
        "PortArgs", _load("sglang.srt.server_args.PortArgs"), ["init_new"]
    )
    problems += missing_attributes(
        "ModelConfig",
        _load("sglang.srt.configs.model_config.ModelConfig"),
        ["from_server_args"],
    )
    problems += missing_attributes(
        "sglang.srt.runtime_context",
        importlib.import_module("sglang.srt.runtime_context"),
        ["publish"],
    )
    # Where Dynamo looks the replaced classes up, and the hook fault injection patches.
    problems += missing_attributes("sglang", importlib.import_module("sglang"), ["Engine"])
    problems += missing_attributes(
        "sglang.multimodal_gen",
        importlib.import_module("sglang.multimodal_gen"),
        ["DiffGenerator"],
    )
    register = importlib.import_module("dynamo.sglang.register")
    problems += missing_attributes("dynamo.sglang.register", register, ["register_model"])
    names = [name for name, _ in parameters(register.register_model)]
    problems += [
        f"register_model has no {name!r} parameter"
        for name in ("model_input", "model_type", "worker_type", "needs")
        if name not in names
    ]
    return problems


def main() -> None:
    problems = report()
    for problem in problems:
        print(problem)
    print(f"{len(problems)} difference(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
