"""CPU stand-ins for the GPU parts of the ai-dynamo 0.7/0.8 era (sglang 0.5.4 to 0.5.6).

That era's multimodal workers differ from 1.x: the encode worker loads a Hugging Face vision
tower itself (`AutoModel.from_pretrained`) and hands the embeddings to the PD worker through
NIXL (`dynamo.nixl_connect.Connector`), and sglang's layers import `sgl_kernel`, whose
CUDA-only build does not load beside a CPU torch. Replaced here, each as small as it can be:

* `LegacyCpuEngine` subclasses that release's real `sglang.Engine` (its `async_generate` /
  `async_encode` stay), with `__init__` launching no scheduler processes;
* `LegacyCpuTokenizerManager` subclasses the real `TokenizerManager` and answers through
  `discovery_harness_workers.stand_in_generation`;
* `CpuVisionTower` stands in for the vision model: zero embeddings, one row per merged patch
  (the real processor's `image_grid_thw` decides the count, as on a GPU);
* `CpuConnector` stands in for NIXL's: the readable side's metadata carries the bytes
  themselves (the real RdmaMetadata model, `nixl_metadata` field), the reading side copies
  them into its descriptor's memory — the data really moves between the two processes;
* `sgl_kernel`: a placeholder module whose every function raises if called (no kernel runs:
  the engine is stood in for). Installed only where the real one cannot load.

`discovery_harness_workers.release_stand_ins` says which of them each release takes; `python -m
discovery_harness_workers.drift`
checks them against the installed release.
"""

from __future__ import annotations

import asyncio
import base64
import ctypes
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import sys
import types
import uuid
import zlib
from typing import Any

logger = logging.getLogger("discovery_harness_workers.legacy_stand_ins")

SGL_KERNEL = "sgl_kernel"
# Submodules left missing: sglang catches their ImportError and takes its own no-kernel path.
SGL_KERNEL_ABSENT = ("sgl_kernel.scalar_type",)


class _KernelPlaceholder(types.ModuleType):
    """`from sgl_kernel import x` succeeds; calling x says which kernel a CPU run reached."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def kernel(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"GPU kernel {self.__name__}.{name} called on the CPU tier")

        kernel.__name__ = name
        return kernel


class _KernelFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname in SGL_KERNEL_ABSENT:
            return None
        if fullname == SGL_KERNEL or fullname.startswith(SGL_KERNEL + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _KernelPlaceholder(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: every attribute is a placeholder."""


def install_kernel_placeholder() -> bool:
    """Put the placeholder in front of a missing sgl_kernel; True when it was needed."""
    if SGL_KERNEL in sys.modules or importlib.util.find_spec(SGL_KERNEL) is not None:
        return False
    sys.meta_path.insert(0, _KernelFinder())
    return True


class CpuVisionTower:
    """What the era's encode worker uses of its vision model: `.device` and
    `get_image_features(pixel_values, image_grid_thw)`."""

    def __init__(self, hidden_size: int, spatial_merge_size: int) -> None:
        import torch

        self.device = torch.device("cpu")
        self.hidden_size = hidden_size
        self.merge = spatial_merge_size

    @classmethod
    def from_pretrained(cls, model_path: str, *args: Any, **kwargs: Any) -> CpuVisionTower:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model_path, trust_remote_code=True)
        vision = getattr(config, "vision_config", None)
        return cls(config.get_text_config().hidden_size, getattr(vision, "spatial_merge_size", 2))

    def get_image_features(self, pixel_values: Any, image_grid_thw: Any = None) -> Any:
        import torch

        tokens = int(torch.prod(image_grid_thw, dim=-1).sum()) // (self.merge**2)
        return torch.zeros(tokens, self.hidden_size, dtype=torch.float16)


class _Readable:
    """The passive side of a transfer: metadata carrying the bytes, completed at once."""

    def __init__(self, descriptor: Any) -> None:
        self._payload = ctypes.string_at(descriptor.ptr, descriptor.size)

    def __enter__(self) -> _Readable:
        return self

    def __exit__(self, *exc: Any) -> None:
        """Nothing registered, nothing to release."""

    def metadata(self) -> Any:
        from dynamo.nixl_connect import OperationKind, RdmaMetadata

        packed = base64.b64encode(zlib.compress(self._payload)).decode()
        return RdmaMetadata(
            nixl_metadata=json.dumps({"cpu-stand-in": packed, "size": len(self._payload)}),
            notification_key=uuid.uuid4().hex,
            operation_kind=int(OperationKind.READ),  # the remote side reads it
        )

    async def wait_for_completion(self) -> None:
        await asyncio.sleep(0)


class _Read:
    def __init__(self, remote: Any, descriptor: Any) -> None:
        metadata = remote if isinstance(remote, dict) else remote.model_dump()
        body = json.loads(metadata["nixl_metadata"])
        payload = zlib.decompress(base64.b64decode(body["cpu-stand-in"]))
        if len(payload) != descriptor.size:
            raise ValueError(f"transfer of {len(payload)} bytes into {descriptor.size}")
        ctypes.memmove(descriptor.ptr, payload, len(payload))

    async def wait_for_completion(self) -> None:
        await asyncio.sleep(0)


class CpuConnector:
    """dynamo.nixl_connect.Connector's surface as the era's multimodal handlers use it."""

    def __init__(self, worker_id: str | None = None) -> None:
        self.worker_id = worker_id

    async def initialize(self) -> None:
        """No NIXL agent to start."""

    async def create_readable(self, local_descriptors: Any) -> _Readable:
        return _Readable(local_descriptors)

    async def begin_read(self, remote_metadata: Any, local_descriptors: Any) -> _Read:
        return _Read(remote_metadata, local_descriptors)


def _publish_runtime_context(server_args: Any) -> None:
    """sglang 0.5.18 keeps the resolved args as a process-wide runtime context (the prefill
    warm-up reads its parallel config); the real Engine publishes it before it spawns
    schedulers. Older sglang has no such context: nothing to do there."""
    try:
        from sglang.srt.runtime_context import publish
    except ImportError:
        return
    if hasattr(server_args, "resolve_once"):
        server_args.resolve_once()
    publish(server_args, role="tokenizer")


@functools.cache
def legacy_engine_classes() -> tuple[Any, Any]:
    """Built on first use: they subclass the installed release's real classes."""
    from sglang.srt.entrypoints.engine import Engine
    from sglang.srt.managers.tokenizer_manager import TokenizerManager
    from sglang.srt.server_args import PortArgs, ServerArgs
    from transformers import AutoTokenizer

    from discovery_harness_workers.stand_in_generation import MAX_TOTAL_TOKENS, StandInGeneration

    class LegacyCpuTokenizerManager(StandInGeneration, TokenizerManager):
        """The release's TokenizerManager class, fed in-process instead of by schedulers."""

        def __init__(self, server_args: ServerArgs, model_config: Any) -> None:
            self.server_args = server_args
            self.model_config = model_config
            self.model_path = server_args.model_path
            self.served_model_name = server_args.served_model_name
            self.context_len = model_config.context_len
            self.is_generation = model_config.is_generation
            self.tokenizer = AutoTokenizer.from_pretrained(
                server_args.tokenizer_path or server_args.model_path
            )
            self.processor = None
            self.mm_processor = None
            self.is_pause = False
            self.num_reserved_tokens = 0  # Dynamo 1.x's token budget reads it
            self.init_stand_in_generation()
            self.init_stand_in_lora()  # runtime LoRA (Dynamo 1.1+ serves load_lora)

    class LegacyCpuEngine(Engine):
        """The release's Engine, with the scheduler launch replaced by the stand-in."""

        def __init__(self, **kwargs: Any) -> None:
            from sglang.srt.configs.model_config import ModelConfig

            server_args = kwargs.get("server_args") or ServerArgs(**kwargs)
            self.server_args = server_args
            _publish_runtime_context(server_args)
            self.port_args = PortArgs.init_new(server_args)
            model_config = ModelConfig.from_server_args(server_args)
            self.tokenizer_manager = LegacyCpuTokenizerManager(server_args, model_config)
            self.template_manager = None
            self.scheduler_info = {
                "max_total_num_tokens": MAX_TOTAL_TOKENS,
                "max_req_input_len": model_config.context_len,
            }
            # Where sglang 0.5.14 and later keep it (Dynamo 1.3+ reads it there).
            self._scheduler_init_result = types.SimpleNamespace(
                scheduler_infos=[self.scheduler_info], all_child_pids=[]
            )
            self.send_to_rpc = None
            try:
                self.loop = asyncio.get_running_loop()
            except RuntimeError:
                self.loop = asyncio.new_event_loop()
                asyncio.set_event_loop(self.loop)
            logger.info("LegacyCpuEngine ready for %s (no scheduler processes)", self.model_path)

        @property
        def model_path(self) -> str:
            return self.server_args.model_path

        def shutdown(self) -> None:
            """Nothing was launched, so nothing to stop."""

    return LegacyCpuEngine, LegacyCpuTokenizerManager


@functools.cache
def engine_class() -> Any:
    """The release's engine stand-in: cut at the scheduler where its sglang has the launch
    hooks (0.5.18 on), else the whole generate_request stood in for (LegacyCpuEngine)."""
    from sglang.srt.entrypoints.engine import Engine

    from discovery_harness_workers.cpu_scheduler import SchedulerCut, cut_at_the_scheduler

    if cut_at_the_scheduler(Engine):
        return type("CpuEngine", (SchedulerCut, Engine), {"__module__": __name__})
    return legacy_engine_classes()[0]
