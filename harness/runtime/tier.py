"""Which tier a run uses, and what each tier is: one `TierPolicy` per tier.

`--tier auto` takes the GPU tier only where it can really run: CUDA GPUs and a CUDA build of
sglang (its kernels package, `sgl_kernel`, and a torch built with CUDA). Everything is looked
up without importing torch or sglang, so the choice costs nothing on a laptop.

Every way the tiers differ (engine, deadlines, spawn mode, Hugging Face settings, GPU
handling) is a field of its policy: code asks the policy, never compares tier names, and the
table `python -m discovery_harness plan` prints is generated from the same fields.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from discovery_harness.model.topology import Scenario
from discovery_harness.runtime import gpu_probe
from discovery_harness.runtime.gpu_probe import GpuProbe

# The stand-in switch for a CPU-tier worker's own python children (workers/startup).
STAND_INS_ENV = "HARNESS_STAND_INS"


@dataclass(frozen=True)
class Deadlines:
    """Default deadlines (each overridable by its command-line option)."""

    register_forked_s: float | None  # a worker forked from the template; None: the layout's
    register_fresh_s: float | None  # a fresh process; None: the layout's start timeout
    card_grace_s: float  # instance without card, once every peer serves
    list_deadline_s: float  # from the last card to the model listed and a request served

    def register(self, scenario: Scenario, forked: bool) -> float:
        """For every worker to serve and register, from the deployment's start."""
        seconds = self.register_forked_s if forked else self.register_fresh_s
        if seconds is None:
            return float(scenario.placement.start_timeout_s)
        if scenario.topology.cpu_register_deadline_s is not None:
            return scenario.topology.cpu_register_deadline_s  # its workers start slow children
        return seconds

    def describe(self) -> str:
        if self.register_fresh_s is None:
            register = "register = the layout's start timeout"
        else:
            register = (
                f"register {self.register_forked_s:.0f} s from the template, "
                f"{self.register_fresh_s:.0f} s fresh"
            )
        return (
            f"{register}, card grace {self.card_grace_s:.0f} s, "
            f"listed and served {self.list_deadline_s:.0f} s"
        )


@dataclass(frozen=True)
class NotJudged:
    """A part of the real system a tier does not run, so no check of it can pass there: a
    test that judges it says so (`@pytest.mark.judges(NAME)`) and is skipped by name."""

    name: str
    what: str
    why: str


# What the CPU tier's stand-ins leave out (docs/cpu-tier.md says each in full).
CPU_NOT_JUDGED = (
    NotJudged(
        "kv-transfer",
        "KV transfer between prefill and decode",
        "no KV cache to move: each disaggregated worker's stand-in scheduler answers alone",
    ),
    NotJudged(
        "model-numerics",
        "real model numerics",
        "the stand-in model always continues with the same reply from fixed logprobs: "
        "temperature, top_p, seeds and grammars change nothing",
    ),
    NotJudged(
        "gpu-memory",
        "GPU memory",
        "no KV pool, memory fraction, CUDA graph or out-of-memory; cached_tokens is always 0",
    ),
)


def skip_reason(policy: TierPolicy, judged: tuple[str, ...]) -> str | None:
    """Why a test that judges `judged` cannot run on `policy`'s tier (None: it can)."""
    missing = [part for part in policy.not_judged if part.name in judged]
    if not missing:
        return None
    parts = "; ".join(f"{part.what} ({part.why})" for part in missing)
    return f"the {policy.name} tier cannot judge {parts}"


@dataclass(frozen=True)
class TierPolicy:
    """Everything that differs between the tiers; all else is the same command."""

    name: str
    engine_module: str  # what `python -m` runs in a worker
    engine_note: str
    device_argv: tuple[str, ...]  # appended to every worker's Dynamo argv
    tiny_models: bool  # tiny local model dirs generated per session (else the catalogue's)
    private_hf_home: bool  # offline in an empty HF_HOME (else the caller's cache, offline)
    gpus: bool  # each worker gets its layout's GPUs; every layout that fits is run
    start_order: bool  # workers start in the layout's order, each serving first
    deadlines: Deadlines
    fault_injection: bool  # self-tests' faults and infra disruptions exist here
    stand_ins: bool  # the worker's python children get the stand-ins (workers/startup)
    template: bool  # workers may be forked from a pre-imported template (the default)
    progress: bool  # live start-up lines by default (starts take minutes)
    not_judged: tuple[NotJudged, ...] = ()  # parts of the real system it does not run

    def describe(self) -> dict[str, str]:
        """Aspect -> how this tier does it (the plan's tier table)."""
        engine = f"python -m {self.engine_module}"
        return {
            "engine": f"{engine} ({self.engine_note})" if self.engine_note else engine,
            "device": (
                f"{shlex.join(self.device_argv)} appended"
                if self.device_argv
                else "sglang picks CUDA"
            ),
            "models": (
                "tiny local dirs of the real models' architectures, generated per session"
                if self.tiny_models
                else "Hugging Face names or local paths (catalogue GPU_MODELS, --model KEY=REF)"
            ),
            "Hugging Face env": (
                "HF_HUB_OFFLINE=1, TRANSFORMERS_OFFLINE=1, a private empty HF_HOME per run"
                if self.private_hf_home
                else "HF_HOME / HF_TOKEN passed through; HF_HUB_OFFLINE=1 and "
                "TRANSFORMERS_OFFLINE=1 once every model is in the cache "
                "(`python -m discovery_harness models fetch`)"
            ),
            "GPUs": (
                "CUDA_VISIBLE_DEVICES = the layout's GPUs within this run's share"
                if self.gpus
                else "CUDA_VISIBLE_DEVICES empty"
            ),
            "layout": (
                "each layout that fits the visible GPUs"
                if self.gpus
                else "the packed 1-GPU layout's flags"
            ),
            "start order": (
                "the layout's start order, each serving first"
                if self.start_order
                else "all workers at once"
            ),
            "deadlines": self.deadlines.describe(),
            "fault injection": (
                "HARNESS_FAULT in the worker's environment (self-tests)"
                if self.fault_injection
                else "none"
            ),
            "child processes": (
                "PYTHONPATH has workers/startup, whose sitecustomize installs the stand-ins in "
                f"python processes the worker spawns ({STAND_INS_ENV}=1)"
                if self.stand_ins
                else "unchanged"
            ),
            "process": (
                "forked from a pre-imported template (--spawn zygote, the default) or fresh"
                if self.template
                else "always a fresh process"
            ),
            "start-up lines": "on (--progress auto)" if self.progress else "with --progress on",
            "not judged": ", ".join(part.what for part in self.not_judged) or "nothing left out",
        }


CPU = TierPolicy(
    name="cpu",
    engine_module="discovery_harness_workers.cpu_sglang",
    engine_note="dynamo.sglang's own main.worker and sglang's own Engine, TokenizerManager and "
    "DetokenizerManager; sglang's scheduler, MMEncoder and DiffGenerator replaced by CPU "
    "stand-ins",
    device_argv=("--device", "cpu"),
    tiny_models=True,
    private_hf_home=True,
    gpus=False,
    start_order=False,
    # A forked worker serves in well under a second; 2-3 fresh ones importing at once on
    # 2 cores take up to 30 s. A card follows its instance within a second (0-0.7 s on
    # 1.6.1); listing follows the last card by 30-100 ms.
    deadlines=Deadlines(
        register_forked_s=30.0, register_fresh_s=120.0, card_grace_s=5.0, list_deadline_s=10.0
    ),
    fault_injection=True,
    stand_ins=True,
    template=True,
    progress=False,
    not_judged=CPU_NOT_JUDGED,
)
GPU = TierPolicy(
    name="gpu",
    engine_module="dynamo.sglang",
    engine_note="",
    device_argv=(),
    tiny_models=False,
    private_hf_home=False,
    gpus=True,
    start_order=True,
    deadlines=Deadlines(
        register_forked_s=None, register_fresh_s=None, card_grace_s=60.0, list_deadline_s=30.0
    ),
    fault_injection=False,
    stand_ins=False,
    template=False,
    progress=True,
)
TIERS = {policy.name: policy for policy in (CPU, GPU)}


@dataclass(frozen=True)
class TierDifference:
    aspect: str
    cpu: str
    gpu: str


def tier_differences() -> tuple[TierDifference, ...]:
    """The rows where the tiers' policies differ, from the policies themselves."""
    cpu, gpu = CPU.describe(), GPU.describe()
    return tuple(TierDifference(a, cpu[a], gpu[a]) for a in cpu if cpu[a] != gpu[a])


@dataclass(frozen=True)
class TierChoice:
    tier: TierPolicy
    reason: str

    def describe(self) -> str:
        return f"tier {self.tier.name}: {self.reason}"


def choose(requested: str, found: GpuProbe | None = None) -> TierChoice:
    """`--tier NAME`: that tier; `auto`: the GPU tier where it can really run (the GPU probe,
    `found`, taken here when not given)."""
    if requested in TIERS:
        return TierChoice(TIERS[requested], "asked for with --tier")
    if requested != "auto":
        raise ValueError(f"--tier must be auto, {' or '.join(TIERS)}, not {requested!r}")
    found = found or gpu_probe.probe()
    if not found.usable:
        return TierChoice(CPU, f"auto: {found.describe()}")
    return TierChoice(GPU, f"auto: {found.describe()}")
