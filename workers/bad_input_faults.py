"""Faults that break one rule of how a worker answers bad input (harness/serving/bad_input.py):
the image diffusion handler is where Dynamo 1.6.1 decides a bad input itself (a size it cannot
parse raises InvalidArgument: the frontend answers 400). Off by default; a worker gets one
with `HARNESS_FAULT=bad-input-...` like any fault in workers/faults.py. Heavy imports happen
only when a fault is installed: this module's names are read by the harness (stdlib only).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

BAD_INPUT_FAULTS = (
    "bad-input-500",  # raised as a RuntimeError: 500 (the runtime answers a ValueError 400)
    "bad-input-accepted",  # a size it cannot parse taken as the default: 200 with an image
    "bad-input-poisons",  # after one refused size, every later request fails
)
FALLBACK_SIZE = (512, 512)
POISONED_MESSAGE = "injected fault: broken since a bad input"


def _say(fault: str, detail: str) -> None:
    print(f"HARNESS-FAULT {fault}: {detail}", flush=True)


def install(fault: str) -> None:
    """Install `fault` (one of BAD_INPUT_FAULTS) on the image diffusion handler."""
    from dynamo.llm.exceptions import InvalidArgument
    from dynamo.sglang.request_handlers.image_diffusion import image_diffusion_handler

    handler = image_diffusion_handler.ImageDiffusionWorkerHandler
    real_parse: Callable[..., tuple[int, int]] = handler._parse_size
    poisoned = [False]

    @functools.wraps(real_parse)
    def parse_size(self: Any, size: str | None) -> tuple[int, int]:
        try:
            return real_parse(self, size)
        except InvalidArgument as refused:
            _say(fault, f"size {size!r}")
            if fault == "bad-input-500":
                raise RuntimeError(str(refused)) from None
            if fault == "bad-input-accepted":
                return FALLBACK_SIZE
            poisoned[0] = True
            raise

    handler._parse_size = parse_size
    if fault != "bad-input-poisons":
        return
    real_generate = handler.generate

    @functools.wraps(real_generate)  # Dynamo reads the handler's signature
    async def generate(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if poisoned[0]:
            _say(fault, "refusing a request after a bad input")
            raise RuntimeError(POISONED_MESSAGE)
        async for item in real_generate(self, request, *args, **kwargs):
            yield item

    handler.generate = generate
