"""Which CPU stand-ins each Dynamo release's sglang needs: data, one row per release range.

The parts themselves live in `discovery_harness_workers.cpu_engine` (sglang 0.5.21's engine, encoder
and
diffusion classes, for ai-dynamo 1.6) and `discovery_harness_workers.legacy_stand_ins` (an engine
built on any
older sglang's own Engine and TokenizerManager, the Hugging Face vision tower, NIXL's
connector, the sgl_kernel placeholder). A row says which of them a release range takes and
where that release's Dynamo looks each replaced class up; `python -m
discovery_harness_workers.drift` checks
the chosen ones against the installed release.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any


@dataclass(frozen=True)
class StandInChoice:
    releases: str  # PEP 440 range of ai-dynamo versions
    # "current": discovery_harness_workers.cpu_engine; "legacy": legacy_stand_ins' engine
    engine: str
    # The encode worker loads a Hugging Face vision tower itself (`AutoModel` in its module).
    vision_tower: bool = False
    # The multimodal workers move embeddings with dynamo.nixl_connect's Connector.
    nixl_connector: bool = False
    # Where the release's Dynamo imports sglang's MMEncoder from (None: it has none).
    mm_encoder_module: str | None = None
    # The stand-in for sglang.multimodal_gen's DiffGenerator, which the image and video workers
    # call (Dynamo 1.0 on): a class of discovery_harness_workers.cpu_diffusion ("": none).
    diff_generator: str = ""


ENCODE_HANDLER = "dynamo.sglang.request_handlers.multimodal.encode_worker_handler"
TRACED, UNTRACED = "CpuDiffGenerator", "CpuDiffGeneratorUntraced"  # cpu_diffusion's classes
CHOICES = (
    # 0.7-0.9: processor in front; the encode worker runs its own vision tower (AutoModel)
    # and hands embeddings over NIXL; sglang 0.5.4-0.5.8.
    StandInChoice(">=0.7,<1.0", "legacy", vision_tower=True, nixl_connector=True),
    # 1.0: sglang's MMEncoder (encode_server) replaces the vision tower; still NIXL.
    StandInChoice(
        ">=1.0,<1.1",
        "legacy",
        nixl_connector=True,
        mm_encoder_module="sglang.srt.disaggregation.encode_server",
        diff_generator=UNTRACED,
    ),
    # 1.1-1.5: embeddings travel by --embedding-transfer-mode (local on the CPU tier); the
    # diffusion generator takes a trace header from sglang 0.5.11 (Dynamo 1.2).
    StandInChoice(
        ">=1.1,<1.2",
        "legacy",
        mm_encoder_module="sglang.srt.disaggregation.encode_server",
        diff_generator=UNTRACED,
    ),
    StandInChoice(
        ">=1.2,<1.6",
        "legacy",
        mm_encoder_module="sglang.srt.disaggregation.encode_server",
        diff_generator=TRACED,
    ),
    StandInChoice(
        ">=1.6",
        "current",
        mm_encoder_module="sglang.srt.disaggregation.encoder.server",
    ),
)


def installed_release() -> str:
    return version("ai-dynamo")


def choice_for(release: str) -> StandInChoice:
    from packaging.specifiers import SpecifierSet

    for choice in CHOICES:
        if SpecifierSet(choice.releases).contains(release, prereleases=True):
            return choice
    raise LookupError(f"no CPU stand-ins declared for ai-dynamo {release}")


def install(choice: StandInChoice) -> None:
    """Point every name the release's Dynamo looks the GPU parts up by at the stand-ins."""
    from discovery_harness_workers import legacy_stand_ins as legacy

    legacy.install_kernel_placeholder()
    if choice.engine == "current":
        install_current()
        return
    import sglang
    import sglang.srt.entrypoints.engine as engine_module

    engine = legacy.engine_class()
    sglang.Engine = engine
    engine_module.Engine = engine
    if choice.nixl_connector:
        connect: Any = importlib.import_module("dynamo.nixl_connect")
        connect.Connector = legacy.CpuConnector
    if choice.vision_tower:
        encode_handler: Any = importlib.import_module(ENCODE_HANDLER)
        encode_handler.AutoModel = legacy.CpuVisionTower
    if choice.mm_encoder_module:
        from discovery_harness_workers import legacy_encoder

        module: Any = importlib.import_module(choice.mm_encoder_module)
        module.MMEncoder = encoder = legacy_encoder.for_real(module.MMEncoder)
        handler: Any = importlib.import_module(ENCODE_HANDLER)
        if hasattr(handler, "MMEncoder"):
            handler.MMEncoder = encoder
    if choice.diff_generator and diffusion_worker(sys.argv):
        install_diff_generator(choice.diff_generator)


# The flags that start an image or video worker (each release's args.py from 1.0).
DIFFUSION_FLAGS = ("--image-diffusion-worker", "--video-generation-worker")


def diffusion_worker(argv: list[str]) -> bool:
    """Whether this worker is an image or video one: only they import sglang 0.5.9-0.5.18's
    diffusion runtime (about 4 s, cache_dit and diffusers), so no other worker pays for it."""
    return any(flag in argv for flag in DIFFUSION_FLAGS)


def install_diff_generator(stand_in: str) -> None:
    """sglang.multimodal_gen.DiffGenerator, where every release's init_diffusion imports it
    from, becomes the CPU stand-in of that generation."""
    import sglang.multimodal_gen as multimodal_gen

    from discovery_harness_workers import cpu_diffusion

    multimodal_gen.DiffGenerator = getattr(cpu_diffusion, stand_in)


def install_current() -> None:
    """sglang 0.5.21 (ai-dynamo 1.6): every name Dynamo looks sglang's GPU classes up by
    points at discovery_harness_workers.cpu_engine's stand-ins."""
    import sglang
    import sglang.multimodal_gen as multimodal_gen
    import sglang.srt.disaggregation.encoder.server as encoder_server
    import sglang.srt.entrypoints.engine as engine_module

    from discovery_harness_workers.cpu_diffusion import CpuDiffGenerator
    from discovery_harness_workers.cpu_engine import CpuEngine, CpuMMEncoder

    sglang.Engine = CpuEngine
    engine_module.Engine = CpuEngine
    encoder_server.MMEncoder = CpuMMEncoder
    multimodal_gen.DiffGenerator = CpuDiffGenerator
