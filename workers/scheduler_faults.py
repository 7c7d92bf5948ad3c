"""The engine faults where the CPU stand-in is sglang's scheduler
(discovery_harness_workers.cpu_scheduler): what workers/bad_answers.py's engine faults and
workers/faults.py's stand-in fault do there. Older eras break their generate_request stand-in
(discovery_harness_workers.stand_in_generation) instead."""

from __future__ import annotations

from typing import Any


def current_era() -> bool:
    """Whether this worker's engine is cut at the scheduler (the stand-ins are installed
    before any fault)."""
    import sglang.srt.entrypoints.engine as engine_module

    from discovery_harness_workers.cpu_scheduler import SchedulerCut

    return issubclass(engine_module.Engine, SchedulerCut)


def break_generation(fault: str) -> None:
    """The scheduler generates no token, runs past max_tokens, or reports one prompt token
    more than the prompt has (generating and embedding)."""
    from sglang.srt.managers.schedule_batch import FINISH_LENGTH

    from discovery_harness_workers.cpu_scheduler import CpuScheduler, ReplyModel

    if fault == "bad-answer-empty-text":
        add = CpuScheduler.add_generate

        def finished_before_a_token(self: Any, recv: Any) -> None:
            add(self, recv)
            self.running[-1].to_finish = FINISH_LENGTH(length=0)

        CpuScheduler.add_generate = finished_before_a_token  # type: ignore[method-assign]
    elif fault == "bad-answer-overlong":

        def past_max_tokens(self: Any, req: Any) -> None:
            req.sampling_params.max_new_tokens = 2 * len(self.model.reply)

        def no_eos(self: Any, produced: int, ignore_eos: bool) -> int:
            return self.reply[produced % len(self.reply)]

        CpuScheduler._init_max_new_tokens = past_max_tokens  # type: ignore[method-assign]
        ReplyModel.next_token = no_eos  # type: ignore[method-assign]
    elif fault == "bad-answer-prompt-tokens":
        send = CpuScheduler._send

        def one_more(socket: Any, output: Any, recv_obj: Any = None) -> None:
            counts = getattr(output, "prompt_tokens", None)
            if counts:
                output.prompt_tokens = [count + 1 for count in counts]
            send(socket, output, recv_obj)

        CpuScheduler._send = staticmethod(one_more)  # type: ignore[method-assign]


def break_lora_bookkeeping(announce: Any) -> None:
    """The stand-in scheduler loses its adapter table, so a LoRA load fails inside it."""
    from discovery_harness_workers.cpu_scheduler import CpuScheduler

    def lost(self: Any, recv: Any) -> Any:
        announce("stand-in-lora-broken", "CpuScheduler without its adapter table")
        return self.no_adapter_table[recv.lora_name]

    CpuScheduler.load_lora = lost  # type: ignore[method-assign]
