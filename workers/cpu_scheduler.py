"""The stand-in for sglang's scheduler processes: the one part of generation that needs a GPU.

sglang's real `Engine` launches its scheduler (the model on a GPU) and its detokenizer as
processes that talk to the real `TokenizerManager` over ZMQ. On the CPU tier everything of
that stays real but the scheduler: `CpuEngine` runs sglang's own launch, the real
`TokenizerManager` (normalisation, `n` fan-out, tokenisation and its refusals, request ids,
logprob assembly, abort) and the real `DetokenizerManager` (in a thread of the worker), and
this module answers on the scheduler's own sockets with what a scheduler sends back.

What the stand-in "model" does: it always continues with the same reply (`REPLY_TEXT`, real
tokens of the tiny model's tokenizer), then its end-of-sequence token. The finish rules
(stop strings, stop token ids, EOS, `max_new_tokens`), the streamed offsets and the output
batch are sglang's own: each request is a real `Req`, streamed by the real
`_GenerationStreamAccumulator`. Logprobs come from a fixed distribution that obeys their
invariants (sorted, at most 0, the chosen token first under any sampling: the reply token is
the model's argmax). Embeddings and rerank scores are deterministic per input.

`python -m discovery_harness_workers.drift` checks the boundary's structs and names against
the installed sglang (`boundary_report`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import os
import threading
from array import array
from collections.abc import Callable
from typing import Any

import zmq

logger = logging.getLogger("discovery_harness_workers.cpu_scheduler")

# What the stand-in "generates": real tokens of the tiny model's tokenizer.
REPLY_TEXT = "Hello! The quick brown fox jumps over the lazy dog."
MAX_TOTAL_TOKENS = 65536  # the KV pool a profiled scheduler would report
SKIP_KERNEL_CHECK = "SGLANG_SKIP_SGL_KERNEL_VERSION_CHECK"
EMBEDDING_DIM = 16  # only where the model config says no hidden size
TOP_PROBABILITY = 0.9  # the reply token's probability; the rest halve from 0.05 down


def candidate_logprob(rank: int) -> float:
    """The log probability of the token ranked `rank` (0: the reply token)."""
    if rank == 0:
        return math.log(TOP_PROBABILITY)
    return math.log((1 - TOP_PROBABILITY) * 0.5**rank)


class ReplyModel:
    """The stand-in model: its argmax continuation and its distribution around it."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_token_id: int | None) -> None:
        self.reply = list(tokenizer.encode(REPLY_TEXT, add_special_tokens=False))
        self.vocab_size = vocab_size
        self.eos = eos_token_id

    def next_token(self, produced: int, ignore_eos: bool) -> int:
        """The token after `produced` output tokens: the reply, then EOS (or the reply
        again when EOS is ignored or the model has none)."""
        if produced < len(self.reply) or ignore_eos or self.eos is None:
            return self.reply[produced % len(self.reply)]
        return self.eos

    def ranked(self, token: int, count: int) -> list[int]:
        """The `count` likeliest tokens when `token` is the argmax: it, then its neighbours."""
        return [(token + rank) % self.vocab_size for rank in range(count)]

    def logprob_of(self, token: int, argmax: int) -> float:
        rank = (token - argmax) % self.vocab_size
        return candidate_logprob(rank) if rank < 64 else math.log(1e-9)


def _eos_token_id(model_config: Any, tokenizer: Any) -> int | None:
    eos = getattr(model_config, "hf_eos_token_id", None)
    if eos:
        return min(eos)
    return getattr(tokenizer, "eos_token_id", None)


class CpuScheduler:
    """Answers on the scheduler's sockets as sglang's rank-0 scheduler does, in a thread."""

    def __init__(self, server_args: Any, port_args: Any) -> None:
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.runtime_context import get_serving
        from sglang.srt.utils.network import get_zmq_socket
        from transformers import AutoTokenizer

        self.server_args = server_args
        self.model_config = ModelConfig.from_server_args(server_args)
        # The real scheduler's tokenizer (None under --skip-tokenizer-init: stop strings are
        # then the caller's to apply, as on a GPU); the stand-in model has its own.
        self.tokenizer = _scheduler_tokenizer()
        self.model = ReplyModel(
            self.tokenizer
            or AutoTokenizer.from_pretrained(server_args.tokenizer_path or server_args.model_path),
            self.model_config.vocab_size,
            _eos_token_id(self.model_config, self.tokenizer),
        )
        self.max_req_input_len = self.model_config.context_len - 1
        self.disaggregation_mode = _disaggregation_mode(server_args)
        context = zmq.Context(2)
        self.recv_from_tokenizer = get_zmq_socket(
            context, zmq.PULL, port_args.scheduler_input_ipc_name, False
        )
        self.send_to_tokenizer = get_zmq_socket(
            context, zmq.PUSH, port_args.tokenizer_ipc_name, False
        )
        # With --skip-tokenizer-init (Dynamo's default) outputs go straight to the tokenizer
        # side, as the real scheduler's channels do; else through the real detokenizer.
        self.send_to_detokenizer = get_zmq_socket(
            context,
            zmq.PUSH,
            port_args.tokenizer_ipc_name
            if get_serving().skip_tokenizer_init
            else port_args.detokenizer_ipc_name,
            False,
        )
        self.loaded_adapters = {
            ref.lora_name: ref.lora_path for ref in (getattr(server_args, "lora_paths", None) or [])
        }
        self.running: list[Any] = []
        self._thread = threading.Thread(
            target=self._loop, name="cpu-stand-in-scheduler", daemon=True
        )

    def info(self) -> dict[str, Any]:
        """What the real scheduler hands the engine once it is ready."""
        page = int(getattr(self.server_args, "page_size", 1) or 1)
        cap = getattr(self.server_args, "max_total_tokens", None)
        tokens = min(MAX_TOTAL_TOKENS, cap) if cap else MAX_TOTAL_TOKENS
        return {
            "status": "ready",
            "max_total_num_tokens": tokens // page * page,
            "max_req_input_len": self.max_req_input_len,
            "startup_time": None,
        }

    def start(self) -> None:
        self._thread.start()

    # The loop: take what arrived, run one decode step of every running request.
    def _loop(self) -> None:
        from sglang.utils import TypeBasedDispatcher

        dispatch = TypeBasedDispatcher(self._handlers())
        dispatch.add_fallback_fn(self._unanswered)
        poller = zmq.Poller()
        poller.register(self.recv_from_tokenizer, zmq.POLLIN)
        while True:  # a daemon thread: it ends with the worker's process
            try:
                ready = poller.poll(timeout=0 if self.running else 100)
                if ready:
                    self._drain(dispatch)
                if self.running:
                    self._step()
            except zmq.ContextTerminated:
                return
            except Exception as failure:  # a stand-in failure must show, never hang a request
                logger.exception("CpuScheduler failed in a decode step")
                self._fail_running(failure)

    def _drain(self, dispatch: Callable[[Any], Any]) -> None:
        from sglang.srt.managers.io_struct import sock_recv

        while True:
            try:
                obj = sock_recv(self.recv_from_tokenizer, flags=zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                output = dispatch(obj)
            except Exception as failure:  # the caller gets an answer that names the stand-in
                logger.exception("CpuScheduler failed on %s", type(obj).__name__)
                output = self._failure_answer(obj, failure)
            if output is not None:
                self._send(self.send_to_tokenizer, output, obj)

    @staticmethod
    def _failure_answer(obj: Any, failure: Exception) -> Any:
        """What answers a request the stand-in failed on: a LoRA update's failed output, or
        an abort of the request with the stand-in's error (a 500), as the real scheduler
        aborts a request it cannot run."""
        from sglang.srt.managers import io_struct as io

        message = f"CpuScheduler failed: {type(failure).__name__}: {failure}"
        if isinstance(obj, io.LoadLoRAAdapterReqInput | io.UnloadLoRAAdapterReqInput):
            return io.LoRAUpdateOutput(success=False, error_message=message)
        rid = getattr(obj, "rid", None)
        if rid is None:
            return None
        reason = {"type": "abort", "message": message, "status_code": 500}
        return io.AbortReq(rid=rid, finished_reason=reason, abort_message=message)

    @staticmethod
    def _send(socket: Any, output: Any, recv_obj: Any = None) -> None:
        from sglang.srt.managers.scheduler_components.output_sender import SenderWrapper

        SenderWrapper(socket).send_output(output, recv_obj)

    def _handlers(self) -> list[tuple[type, Callable[[Any], Any]]]:
        from sglang.srt.managers import io_struct as io

        handlers: list[tuple[type, Callable[[Any], Any]]] = [
            (io.TokenizedGenerateReqInput, self.add_generate),
            (io.BatchTokenizedGenerateReqInput, self._each(self.add_generate)),
            (io.TokenizedEmbeddingReqInput, self.embed),
            (io.BatchTokenizedEmbeddingReqInput, self._each(self.embed)),
            (io.AbortReq, self.abort),
            (io.LoadLoRAAdapterReqInput, self.load_lora),
            (io.UnloadLoRAAdapterReqInput, self.unload_lora),
            (io.FlushCacheReqInput, lambda _: io.FlushCacheReqOutput(success=True)),
            (io.FreezeGCReq, lambda _: None),
            (io.ReleaseMemoryOccupationReqInput, lambda _: io.ReleaseMemoryOccupationReqOutput()),
            (io.ResumeMemoryOccupationReqInput, lambda _: io.ResumeMemoryOccupationReqOutput()),
            (io.PauseGenerationReqInput, lambda _: None),
            (io.ContinueGenerationReqInput, lambda _: None),
        ]
        return handlers

    @staticmethod
    def _each(handle: Callable[[Any], None]) -> Callable[[Any], None]:
        """A batch of tokenized requests is its items, one after the other."""

        def each(batch: Any) -> None:
            for item in batch:
                handle(item)

        return each

    def _unanswered(self, obj: Any) -> None:
        """A request a real scheduler answers and the stand-in does not: said in the worker's
        log by name (its caller waits for an answer that will not come)."""
        name = type(obj).__name__
        logger.error("CPU stand-in scheduler: no answer for %s (the caller will wait)", name)

    # Generation.
    def add_generate(self, recv: Any) -> None:
        from sglang.srt.managers.schedule_batch import Req
        from sglang.srt.managers.utils import validate_input_length
        from sglang.srt.runtime_context import get_serving

        input_ids = recv.input_ids
        if recv.input_embeds is not None:
            input_ids = array("q", [1]) * len(recv.input_embeds)
        req = Req(
            recv.rid,
            recv.input_text,
            input_ids,
            recv.sampling_params,
            return_logprob=recv.return_logprob,
            top_logprobs_num=recv.top_logprobs_num,
            token_ids_logprob=recv.token_ids_logprob,
            stream=recv.stream,
            lora_id=recv.lora_id,
            eos_token_ids=self.model_config.hf_eos_token_id,
            bootstrap_host=recv.bootstrap_host,
            bootstrap_port=recv.bootstrap_port,
            bootstrap_room=recv.bootstrap_room,
            disagg_mode=self.disaggregation_mode,
            vocab_size=self.model_config.vocab_size,
            http_worker_ipc=recv.http_worker_ipc,
            time_stats=recv.time_stats,
        )
        req.tokenizer = self.tokenizer
        self._init_max_new_tokens(req)
        error = validate_input_length(
            req, self.max_req_input_len, get_serving().allow_auto_truncate
        )
        if error:
            req.set_finish_with_abort(error)
        elif recv.return_logprob:
            start = recv.logprob_start_len
            if start == -1:
                start = len(req.origin_input_ids) - 1
            req.logprob_start_len = start
            self._input_logprobs(req)
        self.running.append(req)

    def _init_max_new_tokens(self, req: Any) -> None:
        """The real scheduler's bound: what fits in the context after the prompt."""
        params = req.sampling_params
        wanted = params.max_new_tokens if params.max_new_tokens is not None else 1 << 30
        room = self.model_config.context_len - len(req.origin_input_ids)
        params.max_new_tokens = max(0, min(wanted, room))

    def _input_logprobs(self, req: Any) -> None:
        """Prompt logprobs from `logprob_start_len` on (the first prompt token has none)."""
        ids = list(req.origin_input_ids)
        start = max(0, req.logprob_start_len)
        positions = range(start, len(ids))
        k = req.logprob.top_logprobs_num
        log = req.logprob
        log.input_token_logprobs_val = [None if i == 0 else candidate_logprob(1) for i in positions]
        log.input_token_logprobs_idx = [ids[i] for i in positions]
        log.input_top_logprobs_val = [
            None if i == 0 else [candidate_logprob(r) for r in range(k)] for i in positions
        ]
        log.input_top_logprobs_idx = [
            None if i == 0 else self.model.ranked(ids[i] - 1, k) for i in positions
        ]
        wanted = log.token_ids_logprob
        log.input_token_ids_logprobs_val = [
            None if i == 0 or not wanted else [candidate_logprob(1) for _ in wanted]
            for i in positions
        ]
        log.input_token_ids_logprobs_idx = [
            None if i == 0 or not wanted else list(wanted) for i in positions
        ]

    def _step(self) -> None:
        """One decode step of every running request, streamed as the real scheduler does."""
        for req in self.running:
            if req.finished():
                continue
            if req.to_finish is None:
                token = self.model.next_token(
                    len(req.output_ids), bool(req.sampling_params.ignore_eos)
                )
                req.output_ids.append(token)
                if req.return_logprob:
                    self._output_logprobs(req, token)
            req.update_finish_state()
        self._stream(self.running)
        self.running = [req for req in self.running if not req.finished()]

    def _fail_running(self, failure: Exception) -> None:
        """Every running request ends with the stand-in's error (a 500 naming it) instead of
        waiting forever; if even that cannot be sent, they are dropped."""
        from sglang.srt.managers.schedule_batch import FINISH_ABORT

        failed, self.running = self.running, []
        message = f"CpuScheduler failed: {type(failure).__name__}: {failure}"
        for req in failed:
            req.finished_reason = FINISH_ABORT(message, 500, "InternalServerError")
        try:
            self._stream(failed)
        except Exception:
            logger.exception("CPU stand-in scheduler could not report its failure")

    def _output_logprobs(self, req: Any, token: int) -> None:
        log = req.logprob
        log.output_token_logprobs_val.append(candidate_logprob(0))
        log.output_token_logprobs_idx.append(token)
        k = log.top_logprobs_num
        log.output_top_logprobs_val.append([candidate_logprob(r) for r in range(k)])
        log.output_top_logprobs_idx.append(self.model.ranked(token, k))
        wanted = log.token_ids_logprob
        if wanted:
            log.output_token_ids_logprobs_val.append(
                [self.model.logprob_of(t, token) for t in wanted]
            )
            log.output_token_ids_logprobs_idx.append(list(wanted))
        else:
            log.output_token_ids_logprobs_val.append(None)
            log.output_token_ids_logprobs_idx.append(None)

    def _stream(self, reqs: list[Any]) -> None:
        from sglang.srt.managers.scheduler_components.output_streamer import (
            _GenerationStreamAccumulator,
        )
        from sglang.srt.runtime_context import get_serving
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        settings = {
            "return_logprob": any(req.return_logprob for req in reqs),
            "return_hidden_states": False,
            "return_routed_experts": False,
            "return_indexer_topk": False,
            "spec_algorithm": SpeculativeAlgorithm.NONE,
            "disaggregation_mode": self.disaggregation_mode,
            "default_stream_interval": get_serving().stream_interval,
            "default_force_stream_interval": _force_stream_interval(),
            "get_cached_tokens_details": lambda req: None,
            "current_weight_version": getattr(get_serving(), "weight_version", None),
        }
        # The settings this sglang's accumulator takes (0.5.18 has no weight version).
        taken = {field.name for field in dataclasses.fields(_GenerationStreamAccumulator)}
        acc = _GenerationStreamAccumulator(
            **{name: value for name, value in settings.items() if name in taken}
        )
        for req in reqs:
            if req.finished() and req.finished_output:
                continue
            acc.accept(req=req)
        payload = acc.to_payload(dp_rank=0, is_idle_batch=False)
        if payload is not None:
            self._send(self.send_to_detokenizer, payload)

    def abort(self, recv: Any) -> None:
        """The real scheduler finishes an aborted running request with an abort reason."""
        from sglang.srt.managers.schedule_batch import FINISH_ABORT

        for req in self.running:
            if recv.abort_all or req.rid == recv.rid:
                req.to_finish = FINISH_ABORT()

    # Pooling models.
    def embed(self, recv: Any) -> None:
        from sglang.srt.managers.io_struct import BatchEmbeddingOutput

        ids = list(recv.input_ids or [])
        digest = hashlib.sha256(repr(ids).encode()).digest()
        if recv.token_type_ids is not None:  # a cross-encoder: one score
            embedding: list[float] = [digest[0] / 255.0]
        else:
            size = getattr(self.model_config, "hidden_size", EMBEDDING_DIM)
            stream = hashlib.shake_256(digest).digest(size)
            embedding = [b / 255.0 for b in stream]
            if recv.dimensions:
                embedding = embedding[: recv.dimensions]
        output = BatchEmbeddingOutput(
            rids=[recv.rid],
            http_worker_ipcs=[recv.http_worker_ipc],
            finished_reasons=[{"type": "length", "length": 0}],
            embeddings=[embedding],
            prompt_tokens=[len(ids)],
            cached_tokens=[0],
            placeholder_tokens_idx=None,
            placeholder_tokens_val=None,
            retraction_counts=[0],
        )
        self._send(self.send_to_detokenizer, output)

    # LoRA: what the model runner's adapter manager answers, one rank.
    def load_lora(self, recv: Any) -> Any:
        from sglang.srt.managers.io_struct import LoRAUpdateOutput

        self.loaded_adapters[recv.lora_name] = recv.lora_path
        return LoRAUpdateOutput(success=True, loaded_adapters=dict(self.loaded_adapters))

    def unload_lora(self, recv: Any) -> Any:
        from sglang.srt.managers.io_struct import LoRAUpdateOutput

        self.loaded_adapters.pop(recv.lora_name, None)
        return LoRAUpdateOutput(success=True, loaded_adapters=dict(self.loaded_adapters))


def _scheduler_tokenizer() -> Any:
    """The tokenizer sglang's scheduler loads (its init_tokenizer, text path)."""
    from sglang.srt.runtime_context import get_model, get_serving
    from sglang.srt.utils.hf_transformers_utils import get_tokenizer

    serving = get_serving()
    if serving.skip_tokenizer_init:
        return None
    return get_tokenizer(
        serving.tokenizer_path,
        tokenizer_mode=serving.tokenizer_mode,
        trust_remote_code=get_model().trust_remote_code,
        revision=get_model().revision,
        tokenizer_backend=serving.tokenizer_backend,
    )


def _disaggregation_mode(server_args: Any) -> Any:
    from sglang.srt.disaggregation.utils import DisaggregationMode

    return DisaggregationMode(getattr(server_args, "disaggregation_mode", "null") or "null")


def _force_stream_interval() -> int:
    from sglang.srt.managers.scheduler_components import output_streamer

    return int(getattr(output_streamer, "DEFAULT_FORCE_STREAM_INTERVAL", 50))


class CpuDetokenizerThread:
    """sglang's real DetokenizerManager, run in a thread of the worker instead of a process."""

    def __init__(self, server_args: Any, port_args: Any) -> None:
        from sglang.srt.managers.detokenizer_manager import DetokenizerManager

        self.manager = DetokenizerManager(server_args, port_args)
        self._thread = threading.Thread(target=self._run, name="cpu-tier-detokenizer", daemon=True)

    def _run(self) -> None:
        from sglang.srt.runtime_context import get_serving

        # As sglang's run_detokenizer_process: with several tokenizer workers (Dynamo's
        # gateway), outputs go back to each worker by its own socket.
        try:
            if get_serving().tokenizer_worker_num == 1:
                self.manager.event_loop()
            else:
                self.manager.multi_http_worker_event_loop()
        except zmq.ContextTerminated:
            return

    def start(self) -> None:
        self._thread.start()


class SchedulerCut:
    """Mixed into a release's own `sglang.Engine` (sglang 0.5.18 on): its two launch hooks
    that would start the scheduler and detokenizer processes run the stand-in scheduler and
    the real detokenizer in this process; everything else of the Engine is sglang's."""

    def __init__(self, **kwargs: Any) -> None:
        # sglang checks the GPU kernel packages' versions (flashinfer, sgl-kernel) before it
        # launches anything; the CPU tier has neither, and runs no kernel of theirs.
        os.environ.setdefault(SKIP_KERNEL_CHECK, "1")
        _image_preprocessing_on_the_cpu()
        super().__init__(**kwargs)

    @classmethod
    def _launch_scheduler_processes(
        cls,
        server_args: Any,
        port_args: Any,
        run_scheduler_process_func: Any,
        *,
        placement_group: Any = None,
    ) -> tuple[Any, list[Any]]:
        """The scheduler stand-in on the scheduler's sockets; no process, no GPU."""
        from sglang.srt.entrypoints.engine import SchedulerInitResult

        scheduler = CpuScheduler(server_args, port_args)
        scheduler.start()
        logger.info("CpuScheduler for %s (no scheduler process)", server_args.model_path)
        return SchedulerInitResult(scheduler_infos=[scheduler.info()], all_child_pids=[]), []

    @classmethod
    def _launch_detokenizer_subprocesses(
        cls, server_args: Any, port_args: Any, run_detokenizer_process_func: Any
    ) -> tuple[list[Any], list[str]]:
        """sglang's own DetokenizerManager, in a thread instead of a process."""
        detokenizer = CpuDetokenizerThread(server_args, port_args)
        detokenizer.start()
        return [], []


def _image_preprocessing_on_the_cpu() -> None:
    """sglang 0.5.18's multimodal processor sends images to the GPU for preprocessing
    (`_fast_image_processor_device` names `cuda:N` wherever the platform is not a CPU one;
    0.5.21 leaves a CUDA-less platform's device unset): on the CPU tier they stay on the CPU,
    as the processor's own default."""
    try:
        from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor
    except ImportError:
        return
    real = getattr(BaseMultimodalProcessor, "_fast_image_processor_device", None)
    if real is None or getattr(real, "cpu_tier", False):
        return

    def on_the_cpu(self: Any, processor: Any) -> str | None:
        device = real(self, processor)
        return None if device and device.startswith("cuda") else device

    on_the_cpu.cpu_tier = True  # type: ignore[attr-defined]
    BaseMultimodalProcessor._fast_image_processor_device = on_the_cpu


def cut_at_the_scheduler(engine: type) -> bool:
    """Whether a release's Engine has the launch hooks, its scheduler the stream accumulator,
    and its settings the runtime context the stand-in reads (sglang 0.5.18 on; 0.5.14 and
    0.5.16 have the hooks but read their settings off the server args)."""
    try:
        from sglang.srt import runtime_context
        from sglang.srt.managers.scheduler_components import output_streamer
    except ImportError:
        return False
    return (
        all(hasattr(engine, hook) for hook in LAUNCH_HOOKS)
        and hasattr(output_streamer, "_GenerationStreamAccumulator")
        and hasattr(runtime_context, "get_serving")
    )


# The only Engine methods the stand-in replaces: the two that start processes.
LAUNCH_HOOKS = ("_launch_scheduler_processes", "_launch_detokenizer_subprocesses")
