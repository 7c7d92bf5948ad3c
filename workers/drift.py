"""What the CPU stand-ins assume about sglang and Dynamo, checked against what is installed.

`python -m discovery_harness_workers.drift` prints one line per difference and exits 1 if there is
any: a
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
    """The stand-ins of the installed release's era, checked against that release."""
    from discovery_harness_workers import release_stand_ins, torchvision_shim

    torchvision_shim.apply()
    choice = release_stand_ins.choice_for(release_stand_ins.installed_release())
    if choice.engine == "current":
        return current_report()
    return legacy_report(choice)


def legacy_report(choice: Any) -> list[str]:
    """ai-dynamo 0.7-1.5 with sglang 0.5.4-0.5.18: the parts its row in
    discovery_harness_workers.release_stand_ins chooses."""
    from discovery_harness_workers import legacy_stand_ins as legacy
    from discovery_harness_workers import release_stand_ins

    legacy.install_kernel_placeholder()
    originals = _replaced_classes(choice)  # before the stand-ins take their names
    real_engine = _load("sglang.srt.entrypoints.engine.Engine")
    release_stand_ins.install(choice)
    tokenizer_manager = _load("sglang.srt.managers.tokenizer_manager.TokenizerManager")
    cut = legacy.engine_class() is not legacy.legacy_engine_classes()[0]
    if cut:  # sglang 0.5.18 on: only the scheduler stood in for
        problems = scheduler_cut_report(real_engine, legacy.engine_class())
    else:
        stand_in_engine, stand_in_manager = legacy.legacy_engine_classes()
        pairs = [
            ("Engine.__init__", real_engine.__init__, stand_in_engine.__init__),
            ("Engine.shutdown", real_engine.shutdown, stand_in_engine.shutdown),
            (
                "TokenizerManager.generate_request",
                tokenizer_manager.generate_request,
                stand_in_manager.generate_request,
            ),
            (
                "TokenizerManager.abort_request",
                tokenizer_manager.abort_request,
                stand_in_manager.abort_request,
            ),
        ]
        problems = [p for label, r, fake in pairs for p in compare_signatures(label, r, fake)]
    problems += missing_attributes("Engine", real_engine, ["async_generate", "async_encode"])
    problems += _engine_construction()
    problems += missing_attributes("sglang", importlib.import_module("sglang"), ["Engine"])
    register = importlib.import_module("dynamo.sglang.register")
    gate = (
        "register_llm_with_readiness_gate"
        if choice.vision_tower
        else ("register_model_with_readiness_gate")
    )
    problems += missing_attributes("dynamo.sglang.register", register, [gate])
    if choice.nixl_connector:
        problems += _connector_report(legacy, originals["Connector"])
    if choice.vision_tower:
        problems += _vision_tower_report(legacy)
    if choice.mm_encoder_module:
        problems += _mm_encoder_report(originals["MMEncoder"])
    if not choice.vision_tower and not cut:  # 1.0+ serves load_lora: the stand-in's LoRA
        problems += lora_report(tokenizer_manager)
    if choice.diff_generator:
        problems += diff_generator_report(choice.diff_generator)
    return problems


def diff_generator_report(stand_in_name: str = "CpuDiffGenerator") -> list[str]:
    """sglang's DiffGenerator (the class the image and video workers call) against its stand-in
    in discovery_harness_workers.cpu_diffusion, and the name Dynamo imports it by."""
    from discovery_harness_workers import cpu_diffusion

    stand_in = getattr(cpu_diffusion, stand_in_name)
    real = _load("sglang.multimodal_gen.runtime.entrypoints.diffusion_generator.DiffGenerator")
    pairs: list[tuple[str, Any, Any]] = [
        ("DiffGenerator.from_pretrained", real.from_pretrained, stand_in.from_pretrained),
        ("DiffGenerator.generate", real.generate, stand_in.generate),
    ]
    problems = [p for label, a, b in pairs for p in compare_signatures(label, a, b)]
    return problems + missing_attributes(
        "sglang.multimodal_gen", importlib.import_module("sglang.multimodal_gen"), ["DiffGenerator"]
    )


def lora_report(tokenizer_manager: Any) -> list[str]:
    """What the stand-in's runtime LoRA (StandInGeneration.init_stand_in_lora) relies on:
    the real load/unload path, which fans out through `update_lora_adapter_communicator`
    (the one part stood in for), sglang's own bookkeeping, and the reply it builds."""
    problems = missing_attributes(
        "TokenizerManager", tokenizer_manager, ["load_lora_adapter", "unload_lora_adapter"]
    )
    sources = "".join(
        inspect.getsource(cls) for cls in tokenizer_manager.__mro__ if cls is not object
    )
    if "update_lora_adapter_communicator" not in sources:
        problems.append(
            "TokenizerManager no longer fans LoRA updates out through "
            "update_lora_adapter_communicator (the stand-in replaces it)"
        )
    if not hasattr(tokenizer_manager, "init_lora"):
        problems += missing_attributes(
            "sglang.srt.lora.lora_registry",
            importlib.import_module("sglang.srt.lora.lora_registry"),
            ["LoRARegistry"],
        )
    io_struct = importlib.import_module("sglang.srt.managers.io_struct")
    problems += missing_attributes(
        "sglang.srt.managers.io_struct",
        io_struct,
        ["LoRAUpdateOutput", "UnloadLoRAAdapterReqInput"],
    )
    if hasattr(io_struct, "LoRAUpdateOutput"):
        fields = {name for name, _ in parameters(io_struct.LoRAUpdateOutput)}
        problems += [
            f"LoRAUpdateOutput has no {name!r} field"
            for name in ("success", "loaded_adapters")
            if name not in fields
        ]
    return problems


def _replaced_classes(choice: Any) -> dict[str, Any]:
    """The release's own classes that its row's stand-ins replace."""
    found = {}
    if choice.nixl_connector:
        found["Connector"] = _load("dynamo.nixl_connect.Connector")
    if choice.mm_encoder_module:
        found["MMEncoder"] = _load(f"{choice.mm_encoder_module}.MMEncoder")
    return found


def _connector_report(legacy: Any, real: Any) -> list[str]:
    """NIXL's Connector as the era's multimodal handlers use it."""
    connect = importlib.import_module("dynamo.nixl_connect")
    pairs = [
        ("Connector.__init__", real.__init__, legacy.CpuConnector.__init__),
        ("Connector.create_readable", real.create_readable, legacy.CpuConnector.create_readable),
        ("Connector.begin_read", real.begin_read, legacy.CpuConnector.begin_read),
    ]
    problems = [p for label, r, fake in pairs for p in compare_signatures(label, r, fake)]
    problems += missing_attributes("dynamo.nixl_connect", connect, ["RdmaMetadata", "Descriptor"])
    problems += missing_attributes("OperationKind", connect.OperationKind, ["READ"])
    fields = connect.RdmaMetadata.model_fields
    problems += [
        f"RdmaMetadata has no field {name!r}"
        for name in ("nixl_metadata", "notification_key", "operation_kind")
        if name not in fields
    ]
    problems += missing_attributes("Descriptor", connect.Descriptor, ["ptr", "size"])
    return problems + _transfer_round_trip(legacy)


def _vision_tower_report(legacy: Any) -> list[str]:
    """0.7-0.9: the encode worker's own Hugging Face vision tower."""
    vision = _load("transformers.Qwen2_5_VLModel")
    problems = compare_signatures(
        "Qwen2_5_VLModel.get_image_features",
        vision.get_image_features,
        legacy.CpuVisionTower.get_image_features,
    )
    from discovery_harness_workers.release_stand_ins import ENCODE_HANDLER

    encode = importlib.import_module(ENCODE_HANDLER)
    return problems + missing_attributes("encode_worker_handler", encode, ["AutoModel", "connect"])


def _mm_encoder_report(real: Any) -> list[str]:
    """1.0-1.5: sglang's MMEncoder, where that release's Dynamo imports it from."""
    from discovery_harness_workers import legacy_encoder

    stand_in = legacy_encoder.for_real(real)
    return compare_signatures(
        "MMEncoder.__init__", real.__init__, stand_in.__init__
    ) + compare_signatures("MMEncoder._encode", real._encode, stand_in._encode)


def _engine_construction() -> list[str]:
    """What every era's engine stand-in builds itself from: sglang's ports and model config."""
    return missing_attributes(
        "PortArgs", _load("sglang.srt.server_args.PortArgs"), ["init_new"]
    ) + missing_attributes(
        "ModelConfig",
        _load("sglang.srt.configs.model_config.ModelConfig"),
        ["from_server_args"],
    )


def _transfer_round_trip(legacy: Any) -> list[str]:
    """The connector stand-in really moves bytes: one transfer through the real metadata model."""
    import asyncio

    import torch
    from dynamo.nixl_connect import Descriptor, RdmaMetadata

    sent = torch.arange(12, dtype=torch.float16).reshape(3, 4)
    received = torch.zeros_like(sent)

    async def transfer() -> None:
        connector = legacy.CpuConnector()
        with await connector.create_readable(Descriptor(sent)) as readable:
            wire = RdmaMetadata.model_validate_json(readable.metadata().model_dump_json())
            await (await connector.begin_read(wire, Descriptor(received))).wait_for_completion()

    asyncio.run(transfer())
    return [] if torch.equal(sent, received) else ["CpuConnector did not move the bytes"]


def current_report() -> list[str]:
    """ai-dynamo 1.x with its sglang (discovery_harness_workers.cpu_engine, whose scheduler
    stand-in answers on sglang's own scheduler boundary: scheduler_boundary checks it)."""
    from discovery_harness_workers import cpu_engine as stand_ins

    engine = _load("sglang.srt.entrypoints.engine.Engine")
    encoder = _load("sglang.srt.disaggregation.encoder.server.MMEncoder")
    problems: list[str] = []
    pairs: list[tuple[str, Any, Any]] = [
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
    ]
    for label, real, stand_in in pairs:
        problems += compare_signatures(label, real, stand_in)
    problems += scheduler_cut_report(engine, stand_ins.CpuEngine)
    problems += missing_attributes("Engine", engine, ["async_generate", "async_encode"])
    problems += missing_attributes(
        "ModelConfig",
        _load("sglang.srt.configs.model_config.ModelConfig"),
        ["from_server_args"],
    )
    # Where Dynamo looks the replaced classes up, and the hook fault injection patches.
    problems += missing_attributes("sglang", importlib.import_module("sglang"), ["Engine"])
    problems += diff_generator_report()
    register = importlib.import_module("dynamo.sglang.register")
    problems += missing_attributes("dynamo.sglang.register", register, ["register_model"])
    names = [name for name, _ in parameters(register.register_model)]
    problems += [
        f"register_model has no {name!r} parameter"
        for name in ("model_input", "model_type", "worker_type", "needs")
        if name not in names
    ]
    return problems


def scheduler_cut_report(real: Any, stand_in: Any) -> list[str]:
    """An engine cut at the scheduler: its launch hooks as the real ones, no other method of
    the real Engine replaced, and the scheduler boundary as recorded for this sglang."""
    from discovery_harness_workers import scheduler_boundary
    from discovery_harness_workers.cpu_scheduler import LAUNCH_HOOKS

    problems = compare_signatures("Engine.__init__", real.__init__, stand_in.__init__)
    for hook in LAUNCH_HOOKS:
        problems += missing_attributes("Engine", real, [hook])
        if hasattr(real, hook):
            problems += compare_signatures(
                f"Engine.{hook}", getattr(real, hook), getattr(stand_in, hook)
            )
    # The generation path is sglang's own down to the scheduler: nothing of it replaced.
    overridden = {
        name
        for klass in stand_in.__mro__[: stand_in.__mro__.index(real)]
        for name in vars(klass)
        if callable(getattr(real, name, None))
    }
    problems += [
        f"the engine stand-in overrides Engine.{name} (only the launch hooks may be replaced)"
        for name in sorted(overridden - {"__init__", *LAUNCH_HOOKS})
    ]
    return problems + scheduler_boundary.report()


def main() -> None:
    problems = report()
    for problem in problems:
        print(problem)
    print(f"{len(problems)} difference(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
