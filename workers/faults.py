"""Fault injection for the CPU launcher: each fault is a bug the harness claims to catch.

Off by default; a worker gets one with HARNESS_FAULT=NAME (and HARNESS_FAULT_DELAY=SECONDS) in
its environment, set by the harness's command builder. Faults patch the single call
every dynamo.sglang init function makes to register (`dynamo.sglang.register.register_model`)
or the request handlers' `generate`, so they reproduce a bug of the #4486 class in any mode
without editing Dynamo.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
from collections.abc import Callable
from typing import Any

from discovery_harness_workers.bad_answers import BAD_ANSWERS
from discovery_harness_workers.bad_answers import install as install_bad_answer
from discovery_harness_workers.bad_input_faults import BAD_INPUT_FAULTS
from discovery_harness_workers.bad_input_faults import install as install_bad_input

logger = logging.getLogger("discovery_harness_workers.faults")

FAULTS = (
    "skip-registration",
    "delayed-registration",
    "wrong-worker-type",
    "exit-after-registration",
    "handler-error",
    "request-error",
    "no-topology",
    "advertise-internal",
    "register-anyway",
    "lora-as-chat",
    "lora-card-stays",
    "lora-unload-drops-base",
    "stand-in-lora-broken",
    "unready-after-registration",
    "never-ready",
    "ready-before-card",
    "canary-rejected",
    "canary-dropped",
    "metrics-label",
    "lora-card-bare",
    *BAD_ANSWERS,  # right registration, wrong answers (workers/bad_answers.py)
    *BAD_INPUT_FAULTS,  # bad input answered wrong (workers/bad_input_faults.py)
)
# Set by the harness for the worker; its own python children (the gateway's) inherit them,
# and their start-up hook installs the same fault (workers/startup/sitecustomize.py).
FAULT_ENV, FAULT_DELAY_ENV = "HARNESS_FAULT", "HARNESS_FAULT_DELAY"
_installed: list[str] = []  # the fault installed in this process, once
EXIT_AFTER_REGISTRATION_CODE = 17
HANDLER_ERROR_MESSAGE = "injected handler fault"
REQUEST_ERROR_MESSAGE = "injected fault on a real request"
REAL_REQUESTS_SERVED = 1  # request-error: the readiness probe is served, later ones fail
UNREADY_REQUESTS = 1  # refused by a worker that registered before it could serve
# An endpoint no worker serves, required for /health ready by never-ready.
NEVER_SERVED_ENDPOINT = "harness_never_served"
READY_BEFORE_CARD_DELAY_S = 3.0  # ready-before-card's registration delay without a given one


def _announce(name: str, detail: str) -> None:
    # Printed plainly so the harness's diagnosis can quote it from the worker log.
    print(f"HARNESS-FAULT {name}: {detail}", flush=True)


def _patch_register(wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    register: Any = importlib.import_module("dynamo.sglang.register")
    register.register_model = wrap(register.register_model)


def _skip(real: Callable[..., Any]) -> Callable[..., Any]:
    async def skipped(*args: Any, **kwargs: Any) -> None:
        _announce("skip-registration", "register_model was not called")

    return skipped


def _delayed(
    seconds: float, name: str = "delayed-registration"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        async def delayed(*args: Any, **kwargs: Any) -> Any:
            _announce(name, f"registering after {seconds:.0f} s")
            await asyncio.sleep(seconds)
            return await real(*args, **kwargs)

        return delayed

    return wrap


def _wrong_worker_type(real: Callable[..., Any]) -> Callable[..., Any]:
    from dynamo.llm import WorkerType

    async def mislabelled(*args: Any, **kwargs: Any) -> Any:
        # A role Dynamo 1.6.1 still accepts, so the worker keeps running with the wrong label:
        # aggregated becomes decode (which must need prefill); any other role, aggregated.
        actual = kwargs.get("worker_type")
        if actual == WorkerType.Aggregated:
            kwargs["worker_type"], kwargs["needs"] = WorkerType.Decode, [[WorkerType.Prefill]]
        else:
            kwargs["worker_type"] = WorkerType.Aggregated
        wrong = kwargs["worker_type"]
        _announce("wrong-worker-type", f"registering as {wrong} instead of {actual}")
        return await real(*args, **kwargs)

    return mislabelled


def _exit_after(real: Callable[..., Any]) -> Callable[..., Any]:
    async def register_then_exit(*args: Any, **kwargs: Any) -> Any:
        result = await real(*args, **kwargs)
        _announce("exit-after-registration", f"exiting with {EXIT_AFTER_REGISTRATION_CODE}")
        os._exit(EXIT_AFTER_REGISTRATION_CODE)
        return result

    return register_then_exit


def _no_topology(real: Callable[..., Any]) -> Callable[..., Any]:
    """Register as a standalone aggregated worker with no peers, as every worker did before
    topology roles existed (Dynamo 0.7.x). 1.6.1 refuses an Encode role with empty needs, so
    the role goes too."""
    from dynamo.llm import WorkerType

    async def standalone(*args: Any, **kwargs: Any) -> Any:
        _announce(
            "no-topology",
            f"registering as aggregated with needs=[] instead of {kwargs.get('worker_type')} "
            f"with needs={kwargs.get('needs')}",
        )
        kwargs["worker_type"] = WorkerType.Aggregated
        kwargs["needs"] = []
        return await real(*args, **kwargs)

    return standalone


def _advertise_internal(real: Callable[..., Any]) -> Callable[..., Any]:
    """An internal worker (ModelType.Empty) registers a public chat surface instead."""
    from dynamo.llm import ModelType

    async def advertised(input_type: Any, output_type: Any, *args: Any, **kwargs: Any) -> Any:
        if output_type == ModelType.Empty:
            _announce("advertise-internal", "registering Chat | Completions instead of Empty")
            output_type = ModelType.Chat | ModelType.Completions
        return await real(input_type, output_type, *args, **kwargs)

    return advertised


def _register_anyway() -> None:
    """A multi-node follower that takes the leader's path: its engine reports node rank 0,
    so dynamo.sglang serves and registers as if it led (the rank check it relies on is
    wrong). Wraps whatever sglang.Engine is (the CPU stand-in, on the CPU tier)."""
    import sglang
    import sglang.srt.entrypoints.engine as engine_module
    from dynamo.sglang._compat import override_server_args

    base = sglang.Engine

    class LeaderByMistake(base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            server_args = kwargs.get("server_args")
            if server_args is not None:  # before the engine resolves and publishes them
                _announce("register-anyway", "the engine reports node rank 0")
                override_server_args(server_args, "harness-fault", node_rank=0)
            super().__init__(*args, **kwargs)

    sglang.Engine = LeaderByMistake
    engine_module.Engine = LeaderByMistake


def _lora_as_chat() -> None:
    """The bug Dynamo PR #8945 fixed: a LoRA loaded into a prefill worker registers as a
    public aggregated Chat model instead of taking the worker's Prefill role."""
    from dynamo.llm import ModelType, WorkerType

    handler_base: Any = importlib.import_module("dynamo.sglang.request_handlers.handler_base")
    real = handler_base.register_llm

    async def as_chat(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("lora_name") and kwargs.get("worker_type") == WorkerType.Prefill:
            _announce("lora-as-chat", f"LoRA '{kwargs['lora_name']}' registered as Chat")
            kwargs["model_type"] = ModelType.Chat | ModelType.Completions
            kwargs["worker_type"], kwargs["needs"] = WorkerType.Aggregated, []
        return await real(*args, **kwargs)

    handler_base.register_llm = as_chat


def _lora_card_stays() -> None:
    """unload_lora unloads the adapter but leaves its card: the frontend keeps routing the
    LoRA's name to a worker that no longer has it."""
    handler_base: Any = importlib.import_module("dynamo.sglang.request_handlers.handler_base")

    async def kept(*args: Any, **kwargs: Any) -> None:
        _announce("lora-card-stays", "unregister_llm was not called")

    handler_base.unregister_llm = kept


def _lora_unload_drops_base() -> None:
    """unload_lora removes the adapter's card and then the base model's own (an unregister
    called without the LoRA's name): the worker serves on with no card for its model."""
    handler_base: Any = importlib.import_module("dynamo.sglang.request_handlers.handler_base")
    real = handler_base.unregister_llm

    async def and_the_base(*args: Any, **kwargs: Any) -> Any:
        result = await real(*args, **kwargs)
        if kwargs.get("lora_name"):
            _announce("lora-unload-drops-base", "unregister_llm called for the base model too")
            await real(endpoint=kwargs["endpoint"])
        return result

    handler_base.unregister_llm = and_the_base


def _stand_in_lora_broken() -> None:
    """Not a Dynamo fault: the harness's own stand-in loses its LoRA bookkeeping (as the
    legacy one did before it called init_lora), so a LoRA load fails inside the stand-in."""
    from discovery_harness_workers import scheduler_faults

    if scheduler_faults.current_era():
        scheduler_faults.break_lora_bookkeeping(_announce)
        return
    from discovery_harness_workers.stand_in_generation import StandInGeneration

    def skipped(self: Any) -> None:
        _announce("stand-in-lora-broken", f"{type(self).__name__} without LoRA bookkeeping")

    StandInGeneration.init_stand_in_lora = skipped  # type: ignore[method-assign]


def _replace_generates(replace: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Every request handler class's own `generate` becomes replace(its generate)."""
    handlers = importlib.import_module("dynamo.sglang.request_handlers")
    for name in handlers.__all__:
        cls = getattr(handlers, name)
        if "generate" in vars(cls):
            cls.generate = replace(cls.generate)


def _break_handlers() -> None:
    async def failing_generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        _announce("handler-error", f"{type(self).__name__}.generate raises")
        raise RuntimeError(HANDLER_ERROR_MESSAGE)
        yield  # an async generator, like the real handlers

    _replace_generates(lambda _real: failing_generate)


def _from_frontend(request: Any) -> bool:
    """A request the frontend sent, not a canary: it names its model (1.3 on), or its prompt
    is more than the canary's one token (the canary's `token_ids` is `[bos]` on every release;
    before 1.3 the frontend's request names no model)."""
    if not isinstance(request, dict):
        return False
    return "model" in request or len(request.get("token_ids") or ()) > 1


def _break_real_requests() -> None:
    """The handler serves its first real request (the harness's readiness probe) and its
    canaries, and raises for every later real request: the worker stays ready while clients
    get 500 (the shape of a handler that fails only on what the frontend sends)."""
    served = [0]

    def failing(real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)  # Dynamo reads the handler's signature to decide what it passes
        async def generate(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            from_frontend = _from_frontend(request)
            if from_frontend and served[0] >= REAL_REQUESTS_SERVED:
                _announce("request-error", f"{type(self).__name__}.generate raises")
                raise RuntimeError(REQUEST_ERROR_MESSAGE)
            served[0] += from_frontend
            async for item in real(self, request, *args, **kwargs):
                yield item

        return generate

    _replace_generates(failing)


def _unready_handlers() -> None:
    """Registered before able to serve: the worker's first UNREADY_REQUESTS requests raise
    Dynamo's WorkerUnavailable (the frontend answers 503), later ones are served."""
    from dynamo._core import WorkerUnavailable

    refused = [0]

    def unready(real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)  # Dynamo reads the handler's signature to decide what it passes
        async def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
            if refused[0] < UNREADY_REQUESTS:
                refused[0] += 1
                _announce("unready-after-registration", f"refusing request {refused[0]}")
                raise WorkerUnavailable("injected: registered before it could serve")
            async for item in real(self, *args, **kwargs):
                yield item

        return generate

    _replace_generates(unready)


def _never_ready() -> None:
    """Registers and serves, but its /health never says ready: the readiness it reports
    requires an endpoint it never serves (read by the runtime when the worker creates it,
    after this)."""
    os.environ["DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS"] = f'["generate", "{NEVER_SERVED_ENDPOINT}"]'
    _announce("never-ready", f"/health also waits for '{NEVER_SERVED_ENDPOINT}', never served")


# The top-level shape of 1.6.1's generate payload (SglangHealthCheckPayload), and of its
# embedding payload: what a canary of the other family looks like.
_GENERATE_SHAPED = {
    "token_ids": [1],
    "stop_conditions": {"max_tokens": 1, "ignore_eos": False},
    "sampling_options": {"temperature": 0.0, "top_p": 1.0, "top_k": -1},
    "eos_token_ids": [],
    "annotations": [],
}


def _reshape_canary() -> None:
    """The upstream #14680 shape: each mode's health-check payload is built in the shape of
    another mode (a generate-shaped canary for pooling and media workers, an embedding-shaped
    one for generating workers), so the worker's handler rejects its own canary while real
    requests are served. Patches the one method every payload class's dict comes from."""
    health_check: Any = importlib.import_module("dynamo.health_check")
    real = health_check.HealthCheckPayload.to_dict

    def wrong_shape(self: Any) -> dict[str, Any]:
        built = real(self)
        if "stop_conditions" in built:
            wrong: dict[str, Any] = {"model": built.get("model", "canary"), "input": "Test"}
        else:
            wrong = dict(_GENERATE_SHAPED)
        _announce(
            "canary-rejected",
            f"{type(self).__name__} payload keys {sorted(wrong)} instead of {sorted(built)}",
        )
        return wrong

    health_check.HealthCheckPayload.to_dict = wrong_shape


def _drop_canary() -> None:
    """A mode that hands serve_endpoint no health-check payload (what the multimodal workers
    did before this project's seed fix, #4512): the runtime then never sends it a canary."""
    health_check: Any = importlib.import_module("dynamo.health_check")
    sglang_health: Any = importlib.import_module("dynamo.sglang.health_check")

    def none(self: Any) -> None:
        _announce("canary-dropped", f"{type(self).__name__}.to_dict returned no payload")
        return None

    health_check.HealthCheckPayload.to_dict = none
    sglang_health.SglangDisaggHealthCheckPayload.to_dict = none


# The init modules that take their metrics labels from setup_sgl_metrics (by name).
_METRICS_USERS = ("init_llm", "init_embedding", "init_diffusion")


def _foreign_metrics_label() -> None:
    """The upstream #8035 shape: the worker's metrics are labelled with its model path instead
    of its served model name, while its card names the served model."""
    publisher: Any = importlib.import_module("dynamo.sglang.publisher")
    real = publisher.setup_sgl_metrics

    @functools.wraps(real)
    async def mislabelled(engine: Any, *args: Any, **kwargs: Any) -> Any:
        made, task, labels = await real(engine, *args, **kwargs)
        other = str(engine.server_args.model_path)
        _announce("metrics-label", f"metrics labelled model={other!r}")
        return made, task, [(k, other if k == "model" else v) for k, v in labels]

    publisher.setup_sgl_metrics = mislabelled
    for name in _METRICS_USERS:
        user: Any = importlib.import_module(f"dynamo.sglang.{name}")
        user.setup_sgl_metrics = mislabelled


def _bare_lora_card() -> None:
    """The upstream #14862 shape: load_lora publishes the LoRA's card without the runtime
    config its base card carries (no parsers, no token budget, no capabilities)."""
    handler_base: Any = importlib.import_module("dynamo.sglang.request_handlers.handler_base")
    real = handler_base.register_llm

    async def bare(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("lora_name") and kwargs.get("runtime_config") is not None:
            _announce("lora-card-bare", f"LoRA '{kwargs['lora_name']}' without runtime_config")
            kwargs.pop("runtime_config")
        return await real(*args, **kwargs)

    handler_base.register_llm = bare


def install_from_environment() -> None:
    """Install the fault the environment names (none: run unmodified). Once per process: a
    fresh worker's start-up hook may have installed it before the launcher runs."""
    install(os.environ.get(FAULT_ENV), float(os.environ.get(FAULT_DELAY_ENV) or 0))


def install(fault: str | None, delay_s: float = 0.0) -> None:
    """Install `fault` in this worker process (None: run unmodified)."""
    if not fault or _installed:
        return
    if fault not in FAULTS:
        raise SystemExit(f"unknown {FAULT_ENV} {fault!r}; choose from {', '.join(FAULTS)}")
    _installed.append(fault)
    _announce(fault, "installed")
    os.environ[FAULT_ENV], os.environ[FAULT_DELAY_ENV] = fault, str(delay_s)
    if fault == "skip-registration":
        _patch_register(_skip)
    elif fault == "delayed-registration":
        _patch_register(_delayed(delay_s))
    elif fault == "wrong-worker-type":
        _patch_register(_wrong_worker_type)
    elif fault == "exit-after-registration":
        _patch_register(_exit_after)
    elif fault == "handler-error":
        _break_handlers()
    elif fault == "request-error":
        _break_real_requests()
    elif fault == "unready-after-registration":
        _unready_handlers()
    elif fault == "never-ready":
        _never_ready()
    elif fault == "ready-before-card":
        # Serving (so ready on /health) long before its card: the registration comes late.
        _patch_register(_delayed(delay_s or READY_BEFORE_CARD_DELAY_S, fault))
    elif fault == "canary-rejected":
        _reshape_canary()
    elif fault == "canary-dropped":
        _drop_canary()
    elif fault == "no-topology":
        _patch_register(_no_topology)
    elif fault == "advertise-internal":
        _patch_register(_advertise_internal)
    elif fault == "register-anyway":
        _register_anyway()
    elif fault == "lora-as-chat":
        _lora_as_chat()
    elif fault == "lora-card-stays":
        _lora_card_stays()
    elif fault == "lora-unload-drops-base":
        _lora_unload_drops_base()
    elif fault == "stand-in-lora-broken":
        _stand_in_lora_broken()
    elif fault == "metrics-label":
        _foreign_metrics_label()
    elif fault == "lora-card-bare":
        _bare_lora_card()
    elif fault in BAD_ANSWERS:
        install_bad_answer(fault, _replace_generates)
    elif fault in BAD_INPUT_FAULTS:
        install_bad_input(fault)
