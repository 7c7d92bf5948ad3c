"""The run as a whole: markers, the tier and other choices made once (kept in the config's
stash), the run's first lines, and the usage checks that must pass before anything starts.

All of it happens only once the harness is asked for (plugin.scope): at configure time when
the command line asks, else when the first item of the harness's is collected."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Generator
from pathlib import Path

import pytest

from discovery_harness.model import catalogue
from discovery_harness.model.topology import Scenario, Topology
from discovery_harness.plugin import options, scope, shared_template
from discovery_harness.processes import ports
from discovery_harness.processes.managed import install_cleanup_handlers
from discovery_harness.report import pytest_run as report_run
from discovery_harness.runtime import (
    dynamo_env,
    dynamo_fit,
    dynamo_src,
    gpu_probe,
    gpu_session,
    gpus,
    spawn,
    tier,
    usage,
)
from discovery_harness.runtime.gpu_probe import GpuProbe
from discovery_harness.runtime.model_source import describe_models
from discovery_harness.runtime.models import apply_overrides

MOST_GPUS = 8  # layouts of one host: a gpu_N marker for each N up to this
MARKERS = {
    "sglang": "exercises dynamo.sglang workers",
    "multimodal": "multimodal topologies (encoder + PD / P / D)",
    "e2e": "end to end: real etcd, NATS, frontend and workers",
    "unit": "the harness's own unit tests (no processes: tests/conftest.py refuses one)",
    "process": "the harness's own tests that start a process (a CLI, pytest, a tool), not e2e",
    "gpu_0": "CPU tier: needs no GPU",
    **{
        f"gpu_{n}": f"GPU tier: a layout on {n} GPU(s) (derived from the placement)"
        for n in range(1, MOST_GPUS + 1)
    },
    "pre_merge": "runs on every change",
    "nightly": "the long matrix; skipped unless selected with -m",
    "long": "a nightly item of over ~20 s whose check a cheaper item CI keeps also makes: "
    "left out of .ci/run's 15 minutes, run by the scheduled CPU workflow and with -m long",
    "selftest": "fault-injection self-tests of the harness's own checks",
    "judges": "judges(NAME, ...): the test judges a part of the real system a tier may not run "
    "(kv-transfer, model-numerics, gpu-memory); skipped by name on such a tier",
    "prestart": "the test calls deploy(scenario) once, with no options: the harness may start "
    "that deployment while earlier tests run (CPU tier, one process)",
    "harness_tests": "the harness's tests of itself (its checkout's tests/): in an -m "
    "selection only when it names selftest, nightly, long, unit, process or harness_tests",
    "cuda_rehearsal": "the CPU tier in a container holding the runtime image's CUDA stack (11 "
    "GB, minutes); only when -m names it",
}


TIER_KEY = pytest.StashKey[tier.TierChoice]()
SPAWN_KEY = pytest.StashKey[str]()
FAULTS_KEY = pytest.StashKey[dict[str, str]]()
GPU_SHARE_KEY = pytest.StashKey[tuple[str, ...]]()
GPU_MEMORY_KEY = pytest.StashKey[tuple]()


PROGRESS_KEY = pytest.StashKey[Callable[[str], None] | None]()
ACTIVE_KEY = pytest.StashKey[bool]()
STARTED_KEY = pytest.StashKey[bool]()
# The run's first lines about what Dynamo runs: --dynamo-src, and the import probe's verdict.
CHECKOUT_KEY = pytest.StashKey[list[str]]()


@pytest.hookimpl(trylast=True)  # after the suite's own markers: ours only where it has none
def pytest_configure(config: pytest.Config) -> None:
    for name, text in scope.OWN_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    config.pluginmanager.register(report_run.RunReport(config), report_run.PLUGIN_NAME)
    if scope.asked_by_command_line(config, options.own_flags(config)):
        activate(config)


def is_active(config: pytest.Config) -> bool:
    return config.stash.get(ACTIVE_KEY, False)


def activate(config: pytest.Config) -> None:
    """The harness asked for: its markers, choices, usage checks and session (once)."""
    if is_active(config):
        return
    config.stash[ACTIVE_KEY] = True
    registered = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    for name, text in MARKERS.items():
        if name not in registered:
            config.addinivalue_line("markers", f"{name}: {text}")
    described = {  # the tier once chosen, below
        "release": dynamo_env.active().version,
        "infra": options.value(config, "infra"),
        "spawn": options.value(config, "spawn"),
    }
    report = config.pluginmanager.get_plugin(report_run.PLUGIN_NAME)
    if report is not None:
        report.start(described)
    try:
        options.check_values(config)
        if options.value(config, "dynamo_env"):
            chosen_env = dynamo_env.resolve(options.value(config, "dynamo_env"))
            os.environ[dynamo_env.ENV_VARIABLE] = chosen_env.python
        config.stash[CHECKOUT_KEY] = _use_checkout(config, report)
        found = _probe(config)
        config.stash[TIER_KEY] = tier.choose(options.value(config, "tier"), found)
        described["tier"] = chosen_tier(config).name
        apply_overrides({}, options.value(config, "model"))
        options.check_for_tier(config, chosen_tier(config))
        config.stash[CHECKOUT_KEY] += _probe_imports(config)
        config.stash[SPAWN_KEY] = spawn.spawn_mode(
            options.value(config, "spawn"), chosen_tier(config), dynamo_env.active().own
        )
        described["spawn"] = config.stash[SPAWN_KEY]
        described["release"] = dynamo_env.active().version
        config.stash[FAULTS_KEY] = usage.injected_faults(
            options.value(config, "inject_fault"), catalogue.load()
        )
        if options.value(config, "port_range"):
            ports.use_range(options.value(config, "port_range"))
    except ValueError as bad:
        raise pytest.UsageError(str(bad)) from None
    no_gpu = gpu_session.usage_problem(config, found, str(options.value(config, "tier")))
    if no_gpu:
        raise pytest.UsageError(no_gpu)
    config.stash[GPU_SHARE_KEY] = gpus.share(found.usable, *gpus.xdist_position())
    if chosen_tier(config).gpus:
        config.stash[GPU_MEMORY_KEY] = gpu_session.start(config, config.stash[GPU_SHARE_KEY])
    config.stash[PROGRESS_KEY] = _progress_sink(config)
    install_cleanup_handlers()
    if config.stash[SPAWN_KEY] == spawn.ZYGOTE:
        shared_template.start_for_workers(config)  # in an xdist controller, for its workers
    if config.stash.get(STARTED_KEY, False):  # asked for only once items were collected
        _first_lines(config)


def _use_checkout(config: pytest.Config, report: report_run.RunReport | None) -> list[str]:
    """--dynamo-src: the checkout and the environment that fits it (unless --dynamo-env
    said; `_probe_imports` then tries the pair). Returns the run's first lines about it.
    xdist workers inherit the controller's choice (both variables)."""
    given = options.value(config, "dynamo_src")
    if not given:
        return []
    lines: list[str] = []
    if hasattr(config, "workerinput"):
        os.environ[dynamo_src.ENV_VARIABLE] = str(Path(given).expanduser().absolute())
        checkout = dynamo_src.read(given)
    else:
        checkout, lines = dynamo_fit.use(given, os.environ.get(dynamo_env.ENV_VARIABLE))
    if report is not None:
        report.checkout = checkout.as_dict()
    return lines


def _probe_imports(config: pytest.Config) -> list[str]:
    """The workers' imports tried once before anything starts, in the controller (xdist
    workers inherit its verdict; a listing starts nothing): the run's first line, or a usage
    error in one line naming the environment (or checkout) and the module."""
    if config.option.collectonly or hasattr(config, "workerinput"):
        return []
    return dynamo_fit.probe_before_start(chosen_tier(config))


def _probe(config: pytest.Config) -> GpuProbe:
    """The GPUs and whether the workers' stack can use them; no CUDA init for --tier cpu (it
    uses no GPU) nor for a listing (it starts nothing)."""
    asked = tier.TIERS.get(options.value(config, "tier"))  # None for auto
    if (asked is not None and not asked.gpus) or config.option.collectonly:
        visible = gpus.visible_gpus()
        return GpuProbe(visible, visible, None)
    return gpu_probe.probe(dynamo_env.active().python)


def _progress_sink(config: pytest.Config) -> Callable[[str], None] | None:
    """Progress lines go to a duplicate of stderr taken now, while pytest's capture is
    suspended: it reaches the terminal during tests, with -q, and from xdist workers."""
    wanted = options.value(config, "progress")
    if wanted == "off" or (wanted == "auto" and not chosen_tier(config).progress):
        return None
    stream = os.fdopen(os.dup(2), "w", buffering=1, errors="replace")
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            stream.write(line + "\n")

    return say


def chosen_tier(config: pytest.Config) -> tier.TierPolicy:
    activate(config)  # a fixture of the harness's asked for by a test of another suite
    return config.stash[TIER_KEY].tier


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[STARTED_KEY] = True
    if is_active(session.config):
        _first_lines(session.config)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The harness's own items, marked as such; the first of them asks for the harness."""
    own = [item for item in items if scope.owns(item)]
    if own:
        activate(config)
    for item in own:
        item.add_marker(scope.ITEM_MARKER)
    if own:
        _skip_what_the_tier_cannot_judge(config, own)


def _skip_what_the_tier_cannot_judge(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that judges a part the chosen tier does not run is skipped, saying which."""
    policy = chosen_tier(config)
    for item in items:
        judged = tuple(part for mark in item.iter_markers("judges") for part in mark.args)
        reason = tier.skip_reason(policy, judged) if judged else None
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def _first_lines(config: pytest.Config) -> None:
    """The run's first lines: which tier, why, and which models (also under -q)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(config, "workerinput"):
        return
    choice = config.stash[TIER_KEY]
    for line in config.stash.get(CHECKOUT_KEY, []):  # --dynamo-src: what runs, first
        reporter.write_line(f"discovery harness: {line}")
    reporter.write_line(f"discovery harness: {choice.describe()}")
    reporter.write_line(f"discovery harness: Dynamo: {dynamo_env.active().describe()}")
    models = describe_models(choice.tier, options.value(config, "model"))
    reporter.write_line(f"discovery harness: models: {models}")
    if choice.tier.not_judged:
        left_out = ", ".join(part.what for part in choice.tier.not_judged)
        reporter.write_line(
            f"discovery harness: not judged on this tier: {left_out} (docs/cpu-tier.md)"
        )
    faults = config.stash[FAULTS_KEY]
    injected = ", ".join(f"{role}={fault}" for role, fault in faults.items())
    reporter.write_line(
        "discovery harness: faults injected: "
        + (f"{injected} (--inject-fault: failures below are on purpose)" if injected else "none")
    )
    if choice.tier.gpus:
        share = config.stash[GPU_SHARE_KEY]
        reporter.write_line(f"discovery harness: GPUs: {','.join(share) or 'none visible'}")


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """`...[aggregated]` with --tier gpu finds nothing: say which ids that tier has."""
    try:
        return (yield)
    except pytest.UsageError:
        config = session.config
        if not is_active(config):
            raise
        hint = options.tier_id_hint(config.args, chosen_tier(config), catalogue.load().topologies)
        if hint is None:
            raise
        raise pytest.UsageError(hint) from None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Before anything starts: the models of the GPU tier's selected topologies, and etcd /
    NATS for any test that deploys, must be there; else one usage error says what to do."""
    config = session.config
    if config.option.collectonly or not is_active(config):
        return
    running = [i for i in session.items if not i.get_closest_marker("skip")]
    if not any("harness_session" in getattr(i, "fixturenames", ()) for i in running):
        return
    problem = usage.unavailable_infra(options.value(config, "infra"))
    if problem is None and not chosen_tier(config).tiny_models:
        topologies = {t.name: t for t in map(topology_of, running) if t is not None}
        problem = usage.missing_gpu_models(
            topologies.values(), catalogue.load(), options.value(config, "model")
        )
    if problem:
        raise pytest.UsageError(problem)


def topology_of(item: pytest.Item) -> Topology | None:
    params = item.callspec.params if hasattr(item, "callspec") else {}
    what = params.get("scenario") or params.get("topology")
    return what.topology if isinstance(what, Scenario) else what
