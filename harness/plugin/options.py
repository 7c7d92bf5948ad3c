"""The harness's pytest options, and their checks: every bad value is one usage error
(exit 4, one line) before anything starts.

Choices are checked here rather than by argparse (whose error is a usage line plus the error),
durations must be positive, and an option the chosen tier would ignore (`--model` on the CPU
tier, `--inject-fault` on the GPU tier) is refused instead of silently doing nothing.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

from discovery_harness.model import catalogue
from discovery_harness.model.topology import Topology
from discovery_harness.plugin import scope
from discovery_harness.processes.infra import PROVIDERS
from discovery_harness.report import pytest_run as report_run
from discovery_harness.runtime import spawn, tier

GROUP = "discovery-harness"
# Every environment variable a user may set instead of (or beside) an option.
ENV_VARIABLES = {
    "HARNESS_INFRA": "default of --infra",
    "HARNESS_TIER": "default of --tier",
    "HARNESS_SPAWN": "default of --spawn",
    "HARNESS_PORT_RANGE": "default of --port-range",
    "HARNESS_PROGRESS": "default of --progress",
    "HARNESS_DYNAMO_ENV": "set by --dynamo-env: the release environment's python",
    "HARNESS_DYNAMO_SRC": "default of --dynamo-src: a Dynamo checkout whose Python the run drives",
    "HARNESS_ENVS_DIR": "where --dynamo-src looks for release environments (default .venvs)",
    "HARNESS_CATALOGUE": "the catalogue module (default discovery_harness_scenarios.catalogue)",
    "HARNESS_CUDA_INIT": "the GPU probe's CUDA init answer, given as JSON (tests without a GPU)",
    "HARNESS_ETCD_IMAGE, HARNESS_NATS_IMAGE": "the images of --infra docker",
    "ETCD_ENDPOINTS, NATS_SERVER": "--infra external (auto takes them when both are set)",
}
INFRA_CHOICES = ("auto", *PROVIDERS)
TIER_CHOICES = ("auto", *tier.TIERS)
SPAWN_CHOICES = ("auto", *spawn.SPAWN_MODES)
PROGRESS_CHOICES = ("auto", "on", "off")
CHOICES = {
    "infra": INFRA_CHOICES,
    "tier": TIER_CHOICES,
    "spawn": SPAWN_CHOICES,
    "progress": PROGRESS_CHOICES,
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


GROUP_TITLE = "discovery harness (the suite: python -m discovery_harness conformance --help)"


def help_epilogue() -> str:
    """Printed after pytest's --help: where the harness's group is, and its variables."""
    width = max(map(len, ENV_VARIABLES))
    rows = [f"  {name:<{width}}  {what}" for name, what in ENV_VARIABLES.items()]
    return "\n".join(
        [
            "",
            f"discovery harness: its options are the group '{GROUP_TITLE}', right after "
            "'general' near the top.",
            "Environment variables the discovery harness reads:",
            *rows,
        ]
    )


def _roles_and_faults() -> tuple[list[str], tuple[str, ...]]:
    # the launcher's vocabulary (stdlib-only module)
    from discovery_harness_workers.faults import FAULTS

    roles = sorted({w.role for t in catalogue.load().topologies for w in t.workers})
    return roles, FAULTS


# Options with a fixed set of values, each defaulting to HARNESS_<NAME> or "auto".
CHOICE_HELP = {
    "infra": "where etcd and NATS come from; auto (default, env HARNESS_INFRA): external when "
    "ETCD_ENDPOINTS and NATS_SERVER are both set, else docker when a Docker API answers, "
    "else process (local etcd and nats-server binaries)",
    "tier": "auto (default, env HARNESS_TIER): gpu where CUDA GPUs and a CUDA build of sglang "
    "are present, else cpu; cpu: CPU stand-ins for sglang's GPU classes (test ids: the "
    "topology, e.g. [aggregated]); gpu: real engines (ids per layout, e.g. [aggregated-1gpu])",
    "spawn": "how CPU-tier workers start (env HARNESS_SPAWN): zygote (auto's choice on the CPU "
    "tier) forks each from a pre-imported template, fresh starts a new interpreter (the GPU "
    "tier's way)",
    "progress": "live start-up lines per worker (started, loading, serving, card, listed, "
    "first answer) on stderr; auto (default, env HARNESS_PROGRESS): on for the GPU tier, "
    "whose starts take minutes",
}
# Durations in seconds: (default, help).
DURATION_HELP: dict[str, tuple[float | None, str]] = {
    "register_deadline": (
        None,
        "seconds for every worker to serve and register (default: the layout's start timeout "
        "on the GPU tier; CPU tier: 30 from the template, 120 fresh)",
    ),
    "card_grace": (
        None,
        "seconds a serving worker may lack its card once all peers serve (default: 5 CPU "
        "tier, 60 GPU tier)",
    ),
    "list_deadline": (
        None,
        "seconds from registration to the model listed and a request served (default: 10 CPU "
        "tier, 30 GPU tier)",
    ),
    "progress_heartbeat": (
        30.0,
        "seconds between 'still starting' lines while a deployment starts",
    ),
}


def add_options(group: pytest.OptionGroup | _Unclashing) -> None:
    """The harness's group, placed right after pytest's `general` so `--help` shows it early."""
    for dest, text in CHOICE_HELP.items():
        group.addoption(
            _flag(dest),
            default=os.environ.get(f"HARNESS_{dest.upper()}", "auto"),
            metavar="|".join(CHOICES[dest]),
            help=text,
        )
    for dest, (default, text) in DURATION_HELP.items():
        group.addoption(_flag(dest), type=float, default=default, metavar="SECONDS", help=text)
    group.addoption(
        "--model",
        action="append",
        default=[],
        metavar="KEY=REF",
        help="GPU tier only: model name or local path per asset key (text, embedding, "
        "rerank, vision-language, image, video); defaults: the catalogue's GPU_MODELS",
    )
    roles, faults = _roles_and_faults()
    group.addoption(
        "--inject-fault",
        action="append",
        default=[],
        metavar="ROLE=FAULT",
        help="CPU tier only: run ROLE with a fault in every topology that has that role, to "
        f"see what the harness reports. Roles: {', '.join(roles)}. Faults: {', '.join(faults)}",
    )
    group.addoption(
        "--port-range",
        default=os.environ.get("HARNESS_PORT_RANGE"),
        metavar="LOW-HIGH",
        help="ports the harness may give processes (default 20000-32767; env HARNESS_PORT_RANGE)",
    )
    group.addoption(
        "--dynamo-env",
        default=None,
        help="a Dynamo release environment (built by `ci/setup.sh --dynamo VERSION`) whose "
        "frontend and workers the run drives; default: the harness's own",
    )
    group.addoption(
        "--dynamo-src",
        default=os.environ.get("HARNESS_DYNAMO_SRC"),
        metavar="DIR",
        help="a Dynamo checkout: the frontend and every worker run its components/src/dynamo "
        "(the work tree as it is) over the runtime and sglang of the release environment that "
        "fits its pyproject.toml (same minor release; --dynamo-env overrides); env "
        "HARNESS_DYNAMO_SRC",
    )
    group.addoption(
        "--probe-after-failure",
        action="store_true",
        help="when a deployment fails readiness, still send its topology's requests and "
        "record the answers (for the conformance history)",
    )


def check_values(config: pytest.Config) -> None:
    """The values that need no tier: choices and durations. Raises ValueError (one line)."""
    for dest, choices in CHOICES.items():
        given = value(config, dest)
        if given not in choices:
            raise ValueError(
                f"{_flag(dest)} {given!r}: not one of {', '.join(choices)}"
                + (f" (from HARNESS_{dest.upper()})" if _from_env(dest, given) else "")
            )
    for dest in DURATION_HELP:
        given = value(config, dest)
        if given is not None and not given > 0:
            raise ValueError(f"{_flag(dest)} {given:g}: a duration must be more than 0 seconds")


def _from_env(dest: str, value: str) -> bool:
    return os.environ.get(f"HARNESS_{dest.upper()}") == value


def check_for_tier(config: pytest.Config, chosen: tier.TierPolicy) -> None:
    """Options the chosen tier would ignore are refused, not dropped."""
    if chosen.tiny_models and value(config, "model"):
        raise ValueError(
            f"--model {value(config, 'model')[0]!r}: the CPU tier ignores --model (it "
            "generates tiny local models); use it with --tier gpu"
        )
    if not chosen.fault_injection and value(config, "inject_fault"):
        raise ValueError(
            f"--inject-fault {value(config, 'inject_fault')[0]!r}: faults exist only in the "
            "CPU tier's launcher; use it with --tier cpu"
        )


def tier_id_hint(
    args: list[str], chosen: tier.TierPolicy, topologies: tuple[Topology, ...]
) -> str | None:
    """Why a `...[ID]` argument found nothing: a topology's ids differ by tier (the CPU tier's
    is the topology's name, the GPU tier's one per layout)."""
    for arg in args:
        if not arg.endswith("]") or "[" not in arg:
            continue
        wanted = arg[arg.rindex("[") + 1 : -1]
        for topology in topologies:
            gpu_ids = [f"{topology.name}-{p.name}" for p in topology.gpu.placements]
            if chosen.gpus and wanted == topology.name:
                return (
                    f"{arg}: [{wanted}] is the CPU tier's id; on the GPU tier each layout is "
                    f"its own test: " + ", ".join(f"[{i}]" for i in gpu_ids)
                )
            if not chosen.gpus and wanted in gpu_ids:
                return (
                    f"{arg}: [{wanted}] is a GPU-tier id (--tier gpu); on the CPU tier the "
                    f"id is [{topology.name}]"
                )
    return None


OWN_FLAGS_KEY = pytest.StashKey[set[str]]()
DEFAULTS_KEY = pytest.StashKey[dict[str, object]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    scope.add_ini(parser)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None, object, object]:
    """The options, added once the suite's own conftest files have added theirs: installed
    in another suite, the harness never takes an option name that suite uses (that suite's
    option wins; the harness then has no such option there)."""
    result = yield
    own = _Unclashing(parser.getgroup(GROUP, GROUP_TITLE, after="general"), _taken(parser))
    add_options(own)
    report_run.add_option(own)
    early_config.stash[OWN_FLAGS_KEY] = own.added
    early_config.stash[DEFAULTS_KEY] = own.defaults
    return result


def _taken(parser: pytest.Parser) -> set[str]:
    """Every option name added so far, in any group (pytest checks a group's own only;
    argparse then refuses the whole command line). pytest keeps the groups privately."""
    groups = [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", [])]
    return {name for g in groups if g is not None for o in g.options for name in o.names()}


class _Unclashing:
    """An option group that leaves out any option whose name is taken."""

    def __init__(self, group: pytest.OptionGroup, taken: set[str]) -> None:
        self.group = group
        self.taken = taken
        self.added: set[str] = set()
        self.defaults: dict[str, object] = {}  # by dest, of every option, added or not

    def addoption(self, *names: str, **attrs: object) -> None:
        dest = str(attrs.get("dest") or names[-1].lstrip("-").replace("-", "_"))
        flag = attrs.get("action") == "store_true"
        self.defaults[dest] = attrs.get("default", False if flag else None)
        if self.taken & set(names):
            return
        self.group.addoption(*names, **attrs)
        self.added.update(names)


def value(config: pytest.Config, dest: str) -> Any:
    """The harness's option `dest` as given; its default where the suite has an option of
    that name (the harness left its own out: the suite's value is not the harness's)."""
    added = config.stash.get(OWN_FLAGS_KEY, None)
    if added is None or _flag(dest) in added:
        return config.getoption(dest)
    return config.stash[DEFAULTS_KEY][dest]


def own_flags(config: pytest.Config) -> set[str]:
    """The harness's option flags this run has (a flag on the command line asks for it)."""
    return config.stash.get(OWN_FLAGS_KEY, set())


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(
    config: pytest.Config,
) -> Generator[None, int | pytest.ExitCode | None, int | pytest.ExitCode | None]:
    """After pytest's --help: a pointer to the harness's group and its variables."""
    result = yield
    if config.option.help:
        print(help_epilogue())
    return result
