"""What every CPU tokenizer-manager stand-in answers, whatever the sglang release.

A mixin for a subclass of the installed sglang's real `TokenizerManager` (see
`discovery_harness_workers.cpu_engine` for 1.x, `discovery_harness_workers.legacy_stand_ins` for the
0.7/0.8 era): instead of
sending requests to scheduler processes, it answers `generate_request` in-process with real
tokens of the tiny model's tokenizer, deterministic embeddings or rerank scores, in the shapes
sglang streams. The subclass sets `self.tokenizer` and calls `init_stand_in_generation()`.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sglang.srt.managers.io_struct import EmbeddingReqInput, GenerateReqInput

# What the stand-in "generates": real tokens of the tiny model's tokenizer.
REPLY_TEXT = "Hello! The quick brown fox jumps over the lazy dog."
MAX_TOTAL_TOKENS = 65536
EMBEDDING_DIM = 16  # only where the model config says no hidden size
# The tokens sglang's processor makes of one image in place of its placeholder: the CPU
# encoder's grid (discovery_harness_workers.cpu_engine.IMAGE_GRID_THW, one frame of 4x4 patches, 2x2
# merged).
IMAGE_TOKENS = 4
STREAM_STEP = 4  # tokens per streamed chunk
_DISJOINT_SETTINGS = ("stream_output", "incremental_streaming_output")


class StandInGeneration:
    """generate_request / abort_request of a TokenizerManager with no schedulers behind it."""

    tokenizer: Any
    rid_to_state: dict[str, Any]
    server_args: Any
    lora_ref_cache: dict[str, Any]

    def init_stand_in_generation(self) -> None:
        self.rid_to_state = {}
        self._reply_ids = self.tokenizer.encode(REPLY_TEXT, add_special_tokens=False)

    def init_stand_in_lora(self) -> None:
        """sglang's own LoRA bookkeeping (registry, lock, caches: its `init_lora`, or what
        a release without one sets in `__init__`); only the fan-out to the scheduler ranks is
        stood in for (`update_lora_adapter_communicator`)."""
        init_lora = getattr(self, "init_lora", None)
        if init_lora is not None:
            init_lora()
        else:
            from sglang.srt.lora.lora_registry import LoRARegistry

            paths = getattr(self.server_args, "lora_paths", None)
            self.lora_registry = LoRARegistry(paths)
            self.lora_update_lock = asyncio.Lock()
            self.lora_ref_cache = {ref.lora_name: ref for ref in (paths or [])}
        self.update_lora_adapter_communicator = self._lora_ranks_reply

    async def _lora_ranks_reply(self, obj: Any) -> list[Any]:
        """What the scheduler ranks answer to a LoRA load/unload: success, one rank."""
        from sglang.srt.managers.io_struct import LoRAUpdateOutput, UnloadLoRAAdapterReqInput

        loaded = {name: ref.lora_path for name, ref in self.lora_ref_cache.items()}
        if isinstance(obj, UnloadLoRAAdapterReqInput):
            loaded.pop(obj.lora_name, None)
        else:
            loaded[obj.lora_name] = obj.lora_path
        return [LoRAUpdateOutput(success=True, loaded_adapters=loaded)]

    def validate_total_tokens(self, *args: Any, **kwargs: Any) -> None:
        """The stand-in has no KV-cache limit to enforce."""

    def abort_request(self, rid: str = "", abort_all: bool = False) -> None:
        self.rid_to_state.pop(rid, None)

    def auto_create_handle_loop(self) -> None:
        """No scheduler responses to pump."""

    async def generate_request(
        self, obj: GenerateReqInput | EmbeddingReqInput, request: Any = None
    ) -> AsyncIterator[Any]:
        if isinstance(obj, EmbeddingReqInput):
            yield self._embed(obj)
            return
        async for chunk in self._generate(obj):
            yield chunk

    async def _generate(self, obj: GenerateReqInput) -> AsyncIterator[dict[str, Any]]:
        # The real manager's normalize_batch_and_arguments refuses first a request with no
        # text, input ids or embeddings (a canary shaped for another mode, upstream #14680);
        # sglang's own check, where the release has it.
        validate = getattr(obj, "_validate_inputs", None)
        if validate is not None:
            validate()
        params = obj.sampling_params or {}
        if isinstance(params, list):
            params = params[0] if params else {}
        max_new = params.get("max_new_tokens") or len(self._reply_ids)
        reply = self._reply_ids[: max(1, min(max_new, len(self._reply_ids)))]
        prompt_tokens = len(obj.input_ids or []) if obj.input_ids is not None else 0
        prompt_tokens += self._image_tokens(getattr(obj, "image_data", None))
        rid = obj.rid if isinstance(obj.rid, str) else uuid.uuid4().hex
        # Like the real manager, own the request id while it runs (Dynamo's multimodal
        # prefill handler waits for it to appear here).
        self.rid_to_state[rid] = obj
        try:
            async for chunk in self._stream(reply, rid, prompt_tokens, max_new):
                yield chunk
        finally:
            self.rid_to_state.pop(rid, None)

    @staticmethod
    def _image_tokens(images: Any) -> int:
        """What sglang's multimodal processor adds to the prompt for images it is handed as
        URLs (http or data:): it loads each (a URL that does not load fails the request, as
        there) and expands its one placeholder token into the image's tokens. Embeddings an
        encoder already made (a dict) arrive expanded by the encode worker."""
        if not images:
            return 0
        items = images if isinstance(images, list) else [images]
        urls = [item for item in items if isinstance(item, str)]
        try:
            from sglang.srt.utils import load_image
        except ImportError:  # an older sglang: the count alone
            return len(urls) * (IMAGE_TOKENS - 1)
        for url in urls:
            load_image(url)
        return len(urls) * (IMAGE_TOKENS - 1)

    async def _stream(
        self, reply: list[int], rid: str, prompt_tokens: int, max_new: int
    ) -> AsyncIterator[dict[str, Any]]:
        # sglang streams only the new tokens when Dynamo asks for it (stream_output from 0.9,
        # incremental_streaming_output from 1.2, sglang 0.5.21 reads its own setting), and
        # everything so far otherwise: Dynamo 0.7/0.8 slice off what they already sent.
        args = getattr(self, "server_args", None)
        modes = [getattr(args, n) for n in _DISJOINT_SETTINGS if hasattr(args, n)]
        disjoint = any(modes) if modes else True
        for start in range(0, len(reply), STREAM_STEP):
            await asyncio.sleep(0)
            last = start + STREAM_STEP >= len(reply)
            yield {
                "output_ids": reply[start if disjoint else 0 : start + STREAM_STEP],
                "text": "",
                "meta_info": {
                    "id": rid,
                    "finish_reason": {
                        "type": "length" if max_new <= len(reply) else "stop",
                        "matched": None,
                    }
                    if last
                    else None,
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": min(start + STREAM_STEP, len(reply)),
                    "cached_tokens": 0,
                },
            }

    def _embed(self, obj: EmbeddingReqInput) -> Any:
        items = obj.text if obj.text is not None else obj.input_ids
        batch = isinstance(items, list) and items and not isinstance(items[0], int)
        inputs = items if batch else [items]
        dimension = getattr(getattr(self, "model_config", None), "hidden_size", EMBEDDING_DIM)
        results = []
        for item in inputs:
            digest = hashlib.sha256(repr(item).encode()).digest()
            if getattr(obj, "is_cross_encoder_request", False):
                embedding: Any = [digest[0] / 255.0]
            else:
                # The pooled hidden state: the model's hidden size, deterministic per input.
                stream = hashlib.shake_256(digest).digest(dimension)
                embedding = [b / 255.0 for b in stream]
            results.append(
                {
                    "embedding": embedding,
                    "meta_info": {
                        "id": uuid.uuid4().hex,
                        "prompt_tokens": self._input_tokens(item),
                        "finish_reason": {"type": "stop"},
                        "cached_tokens": 0,
                    },
                }
            )
        return results if batch else results[0]

    def _input_tokens(self, item: Any) -> int:
        """An input's length as sglang's tokenizer manager counts it: token ids as given, a
        text (or a cross-encoder's query and document) tokenized with special tokens."""
        if isinstance(item, list) and item and isinstance(item[0], int):
            return len(item)
        if isinstance(item, list | tuple):
            return len(self.tokenizer(*item)["input_ids"])
        return len(self.tokenizer(item)["input_ids"])
