"""The pytest plugin: options, markers, session infrastructure, the `deploy` fixture, reports.

Registered through the `pytest11` entry point (and loaded by the project's conftest), so
any test can ask for `deploy` and get a topology running against real etcd, NATS, the real
frontend and real dynamo.sglang workers.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import catalogue, ports, pytest_options, usage
from harness.deployment import Deployment, Session, Settings
from harness.frontend import start_frontend
from harness.history import record
from harness.infra import Endpoints, select_provider
from harness.infra.local_process import LocalProcessProvider
from harness.model_source import ModelSource, describe_models, model_source
from harness.observer import DiscoveryObserver
from harness.processes import install_cleanup_handlers
from harness.report import pytest_run as report_run
from harness.report.observed import from_deployment
from harness.report.pytest_run import KNOWN_VIOLATION, TIMELINE_ROW
from harness.requests import Reply
from harness.runtime import dynamo_env, gpu_session, gpus, spawn, tier
from harness.runtime.launch import template_env
from harness.runtime.models import apply_overrides
from harness.topology import Scenario, Topology, UnsupportedRelease
from harness.violations import ContractFailure

ROOT = Path(__file__).resolve().parent.parent

MARKERS = {
    "sglang": "exercises dynamo.sglang workers",
    "multimodal": "multimodal topologies (encoder + PD / P / D)",
    "e2e": "end to end: real etcd, NATS, frontend and workers",
    "unit": "the harness's own unit tests (no processes)",
    "gpu_0": "CPU tier: needs no GPU",
    **{
        f"gpu_{n}": f"GPU tier: a layout on {n} GPU(s) (derived from the placement)"
        for n in (1, 2, 4)
    },
    "pre_merge": "runs on every change",
    "nightly": "the long matrix; skipped unless selected with -m",
    "selftest": "fault-injection self-tests of the harness's own checks",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    pytest_options.add_options(parser)
    report_run.add_option(parser.getgroup(pytest_options.GROUP))


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Iterator[int | pytest.ExitCode | None]:
    """After pytest's --help: a pointer to the harness's group and its variables."""
    result = yield
    if config.option.help:
        print(pytest_options.help_epilogue())
    return result


TIER_KEY = pytest.StashKey[tier.TierChoice]()
SPAWN_KEY = pytest.StashKey[str]()
FAULTS_KEY = pytest.StashKey[dict[str, str]]()
GPU_SHARE_KEY = pytest.StashKey[tuple[str, ...]]()
GPU_MEMORY_KEY = pytest.StashKey[tuple]()


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    described = {  # the tier once chosen, below
        "release": dynamo_env.active().version,
        "infra": config.getoption("infra"),
        "spawn": config.getoption("spawn"),
    }
    config.pluginmanager.register(
        report_run.RunReport(config, described), "discovery-harness-report"
    )
    try:
        pytest_options.check_values(config)
        config.stash[TIER_KEY] = tier.choose(config.getoption("tier"))
        described["tier"] = chosen_tier(config).name
        if config.getoption("dynamo_env"):
            chosen_env = dynamo_env.resolve(config.getoption("dynamo_env"))
            os.environ[dynamo_env.ENV_VARIABLE] = chosen_env.python
        apply_overrides({}, config.getoption("model"))
        pytest_options.check_for_tier(config, chosen_tier(config))
        config.stash[SPAWN_KEY] = spawn.spawn_mode(
            config.getoption("spawn"), chosen_tier(config), dynamo_env.active().own
        )
        described["spawn"] = config.stash[SPAWN_KEY]
        described["release"] = dynamo_env.active().version
        config.stash[FAULTS_KEY] = usage.injected_faults(
            config.getoption("inject_fault"), catalogue.load()
        )
        if config.getoption("port_range"):
            ports.use_range(config.getoption("port_range"))
    except ValueError as bad:
        raise pytest.UsageError(str(bad)) from None
    no_gpu = gpu_session.usage_problem(config)
    if no_gpu:
        raise pytest.UsageError(no_gpu)
    config.stash[GPU_SHARE_KEY] = gpus.share(gpus.visible_gpus(), *gpus.xdist_position())
    if chosen_tier(config).gpus:
        config.stash[GPU_MEMORY_KEY] = gpu_session.start(config, config.stash[GPU_SHARE_KEY])
    config.stash[PROGRESS_KEY] = _progress_sink(config)
    install_cleanup_handlers()


PROGRESS_KEY = pytest.StashKey[Callable[[str], None] | None]()


def _progress_sink(config: pytest.Config) -> Callable[[str], None] | None:
    """Progress lines go to a duplicate of stderr taken now, while pytest's capture is
    suspended: it reaches the terminal during tests, with -q, and from xdist workers."""
    wanted = config.getoption("progress")
    if wanted == "off" or (wanted == "auto" and not chosen_tier(config).progress):
        return None
    stream = os.fdopen(os.dup(2), "w", buffering=1, errors="replace")
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            stream.write(line + "\n")

    return say


def chosen_tier(config: pytest.Config) -> tier.TierPolicy:
    return config.stash[TIER_KEY].tier


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """The run's first lines: which tier, why, and which models (also under -q)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(session.config, "workerinput"):
        return
    choice = session.config.stash[TIER_KEY]
    reporter.write_line(f"discovery harness: {choice.describe()}")
    reporter.write_line(f"discovery harness: Dynamo: {dynamo_env.active().describe()}")
    models = describe_models(choice.tier, session.config.getoption("model"))
    reporter.write_line(f"discovery harness: models: {models}")
    faults = session.config.stash[FAULTS_KEY]
    injected = ", ".join(f"{role}={fault}" for role, fault in faults.items())
    reporter.write_line(
        "discovery harness: faults injected: "
        + (f"{injected} (--inject-fault: failures below are on purpose)" if injected else "none")
    )
    if choice.tier.gpus:
        share = session.config.stash[GPU_SHARE_KEY]
        reporter.write_line(f"discovery harness: GPUs: {','.join(share) or 'none visible'}")


def parametrize_scenarios(metafunc: pytest.Metafunc, topologies: tuple[Topology, ...]) -> None:
    """One item per topology on the CPU tier (its packed layout); on the GPU tier one per
    layout, marked gpu_N from the layout, with the layout's timeout."""
    if "scenario" not in metafunc.fixturenames:
        return
    chosen = chosen_tier(metafunc.config)
    version = dynamo_env.active().version
    params = []
    for declared in topologies:
        try:  # as the run's Dynamo release deploys it (an older release: its era's workers)
            topology = declared.for_release(version)
        except UnsupportedRelease as reason:
            skip = pytest.mark.skip(reason=str(reason))
            params.append(pytest.param(Scenario.packed(declared), id=declared.name, marks=skip))
            continue
        common = [getattr(pytest.mark, m) for m in topology.marks]
        if not chosen.gpus:  # the packed layout, which needs no GPU here
            marks = [*common, pytest.mark.gpu_0, pytest.mark.timeout(topology.timeout_s)]
            marks += _cpu_skip(topology)
            if topology.cpu_nightly:
                marks.append(pytest.mark.nightly)
            params.append(pytest.param(Scenario.packed(topology), id=topology.name, marks=marks))
            continue
        for placement in topology.gpu.placements:
            marks = [
                *common,
                getattr(pytest.mark, f"gpu_{placement.gpus}"),
                pytest.mark.timeout(placement.timeout_s),
            ]
            if topology.gpu.nightly:
                marks.append(pytest.mark.nightly)
            scenario = Scenario(topology, placement)
            params.append(
                pytest.param(scenario, id=f"{topology.name}-{placement.name}", marks=marks)
            )
    metafunc.parametrize("scenario", params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Self-tests run only when -m names them (or, for pre_merge ones, with no -m at all);
    nightly items only when -m is given. On the GPU tier, layouts that need more GPUs than
    this run's share are skipped, and so are CPU-tier tests (self-tests: their faults live in
    the CPU launcher)."""
    expression = config.getoption("markexpr") or ""
    keep, drop = [], []
    for item in items:
        _skip_what_cannot_run(item, config)
        is_selftest = item.get_closest_marker("selftest") is not None
        nightly = item.get_closest_marker("nightly") is not None
        if (expression and is_selftest and "selftest" not in expression) or (
            not expression and nightly
        ):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[object]:
    """`...[aggregated]` with --tier gpu finds nothing: say which ids that tier has."""
    try:
        return (yield)
    except pytest.UsageError:
        config = session.config
        hint = pytest_options.tier_id_hint(
            config.args, chosen_tier(config), catalogue.load().topologies
        )
        if hint is None:
            raise
        raise pytest.UsageError(hint) from None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Before anything starts: the models of the GPU tier's selected topologies, and etcd /
    NATS for any test that deploys, must be there; else one usage error says what to do."""
    config = session.config
    if config.option.collectonly:
        return
    running = [i for i in session.items if not i.get_closest_marker("skip")]
    if not any("harness_session" in getattr(i, "fixturenames", ()) for i in running):
        return
    problem = usage.unavailable_infra(config.getoption("infra"))
    if problem is None and not chosen_tier(config).tiny_models:
        topologies = {t.name: t for t in map(_topology_of, running) if t is not None}
        problem = usage.missing_gpu_models(
            topologies.values(), catalogue.load(), config.getoption("model")
        )
    if problem:
        raise pytest.UsageError(problem)


def _topology_of(item: pytest.Item) -> Topology | None:
    params = item.callspec.params if hasattr(item, "callspec") else {}
    what = params.get("scenario") or params.get("topology")
    return what.topology if isinstance(what, Scenario) else what


def _skip_what_cannot_run(item: pytest.Item, config: pytest.Config) -> None:
    if not chosen_tier(config).gpus:
        return
    if item.get_closest_marker("gpu_0") is not None:
        item.add_marker(
            pytest.mark.skip(reason="a CPU-tier test (fault injection or CPU-only start order)")
        )
        return
    scenario = item.callspec.params.get("scenario") if hasattr(item, "callspec") else None
    if isinstance(scenario, Scenario):
        share = config.stash[GPU_SHARE_KEY]
        reason = gpu_session.why_skipped(scenario, share, config.stash[GPU_MEMORY_KEY])
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


def topology_param(topology: Topology, *extra_marks: pytest.MarkDecorator) -> object:
    """A CPU-tier parameter for self-tests (their faults exist only in the CPU launcher)."""
    marks = [getattr(pytest.mark, m) for m in topology.marks]
    marks += [pytest.mark.gpu_0, pytest.mark.timeout(topology.timeout_s), *_cpu_skip(topology)]
    if topology.cpu_nightly:
        marks.append(pytest.mark.nightly)
    return pytest.param(topology, id=topology.name, marks=[*marks, *extra_marks])


def _cpu_skip(topology: Topology) -> list[pytest.MarkDecorator]:
    """A topology that cannot run faithfully on the CPU tier is GPU-only, with its reason."""
    if topology.cpu_skip is None:
        return []
    return [pytest.mark.skip(reason=f"GPU-only: {topology.cpu_skip}")]


# -- session fixtures ------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _process_environment_kept() -> Iterator[None]:
    """What a test (or a library it loads: torch sets TORCHINDUCTOR_CACHE_DIR when it loads a
    model) leaves in os.environ ends with the test. Every process the harness starts inherits
    os.environ, and a forked worker must match the template in what it read at import: without
    this, a worker's environment would depend on which tests ran before it (and so on xdist's
    scheduling). Session fixtures are set up before this snapshot, so theirs stays."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        if dict(os.environ) != saved:
            os.environ.clear()
            os.environ.update(saved)


@pytest.fixture(scope="session")
def harness_settings(pytestconfig: pytest.Config) -> Settings:
    return Settings(
        tier=chosen_tier(pytestconfig),
        spawn=pytestconfig.stash[SPAWN_KEY],
        register_deadline_s=pytestconfig.getoption("register_deadline"),
        card_grace_s=pytestconfig.getoption("card_grace"),
        list_deadline_s=pytestconfig.getoption("list_deadline"),
    )


@pytest.fixture(scope="session")
def harness_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("harness")


@pytest.fixture(scope="session")
def harness_scratch() -> Iterator[Path]:
    """A short private temp root for worker TMPDIRs (IPC socket paths are length-limited)."""
    path = Path(tempfile.mkdtemp(prefix="dh-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def infra_endpoints(pytestconfig: pytest.Config, harness_workdir: Path) -> Iterator[Endpoints]:
    provider = select_provider(pytestconfig.getoption("infra"))
    endpoints = provider.start(harness_workdir / "infra")
    try:
        yield endpoints
    finally:
        provider.stop()


@pytest.fixture(scope="session")
def discovery_observer(infra_endpoints: Endpoints) -> Iterator[DiscoveryObserver]:
    observer = DiscoveryObserver(infra_endpoints.etcd).start()
    try:
        yield observer
    finally:
        observer.stop()


@pytest.fixture(scope="session")
def models(pytestconfig: pytest.Config, harness_workdir: Path) -> ModelSource:
    return model_source(
        chosen_tier(pytestconfig), pytestconfig.getoption("model"), harness_workdir / "models"
    )


@pytest.fixture(scope="session")
def worker_template(
    pytestconfig: pytest.Config,
    infra_endpoints: Endpoints,
    harness_workdir: Path,
    harness_scratch: Path,
) -> Iterator[spawn.Zygote | None]:
    """The pre-imported CPU worker template (`--spawn zygote`), or None (fresh processes).
    Started here and not waited for: its imports overlap the frontend's start."""
    if pytestconfig.stash[SPAWN_KEY] != spawn.ZYGOTE:
        yield None
        return
    env = template_env(
        infra_endpoints.etcd,
        infra_endpoints.nats,
        harness_scratch / "hf",
        harness_scratch / "zygote",
    )
    zygote = spawn.Zygote(env, harness_workdir / "zygote.log", ROOT).start()
    try:
        yield zygote
    finally:
        zygote.stop()


@pytest.fixture(scope="session")
def harness_session(
    infra_endpoints: Endpoints,
    discovery_observer: DiscoveryObserver,
    models: ModelSource,
    harness_settings: Settings,
    harness_workdir: Path,
    harness_scratch: Path,
    worker_template: spawn.Zygote | None,
    pytestconfig: pytest.Config,
) -> Iterator[Session]:
    frontend = start_frontend(
        infra_endpoints, harness_workdir, harness_scratch, harness_settings.tier
    )
    session: Session | None = None
    try:
        session = Session(
            infra_endpoints,
            frontend,
            discovery_observer,
            models.path_for,
            harness_workdir,
            harness_settings,
            harness_scratch,
            gpu_share=pytestconfig.stash[GPU_SHARE_KEY],
            progress=pytestconfig.stash[PROGRESS_KEY],
            progress_heartbeat_s=pytestconfig.getoption("progress_heartbeat"),
            spawner=worker_template,
        )
        yield session
    finally:
        if session is not None:
            session.stops.drain()
        frontend.proc.stop(grace=10)


# -- the deploy fixture ----------------------------------------------------------------------
DeployFn = Callable[..., Deployment]


class _Deploy:
    """The `deploy` fixture's value: shown as itself in a failing test's arguments."""

    def __init__(self, deploy: DeployFn) -> None:
        self._deploy = deploy

    def __call__(self, *args: Any, **kwargs: Any) -> Deployment:
        __tracebackhide__ = True
        return self._deploy(*args, **kwargs)

    def __repr__(self) -> str:
        return "<deploy fixture>"


# `deploy(topology_or_scenario, faults={role: fault}, **options)`: start it and wait until it
# is ready (raises ContractFailure otherwise). Options are Deployment's: fault_delay_s, strict,
# sequential (the layout's start order on the CPU tier too), spawn ("fresh": fresh processes
# whatever --spawn), order (every worker one at a time in that order, each registered or left
# waiting for its peers before the next), frontend ("own" / "late"), env (for every worker).
# A topology alone deploys its packed layout. Every deployment gets a verdict (verify() at
# teardown if the test did not reach it) and is stopped after. (A comment, not a docstring: a
# failure at teardown prints this function's source.)
@pytest.fixture
def deploy(harness_session: Session, request: pytest.FixtureRequest) -> Iterator[DeployFn]:
    """Deploy a topology and wait until it is ready; a verdict on each at teardown."""
    yield from _deployer(harness_session, request)


def _deployer(session: Session, request: pytest.FixtureRequest) -> Iterator[DeployFn]:
    started: list[Deployment] = []
    injected = request.config.stash[FAULTS_KEY]

    def _deploy(
        what: Topology | Scenario, faults: dict[str, str] | None = None, **options: Any
    ) -> Deployment:
        __tracebackhide__ = True
        topology = what.topology if isinstance(what, Scenario) else what
        if faults is None:
            roles = {w.role for w in topology.workers}
            faults = {role: fault for role, fault in injected.items() if role in roles}
        if faults and not session.settings.tier.fault_injection:
            pytest.skip("fault injection needs the CPU tier")
        deployment = Deployment(what, session, faults=faults, **options)
        started.append(deployment)
        try:
            return deployment.start().await_ready()
        except ContractFailure:
            if request.config.getoption("probe_after_failure"):
                _probe(deployment)
            raise

    __tracebackhide__ = True
    failures: list[ContractFailure] = []
    try:
        yield _Deploy(_deploy)
    finally:
        for deployment in started:
            _record_timeline(request, deployment)
            if not deployment.verdict_given:  # the test body never got to verify(), or raised
                try:
                    deployment.verify()
                except ContractFailure as failure:
                    failures.append(failure)
            properties = request.node.user_properties
            properties += record.reply_properties(deployment.replies)
            properties += record.violation_properties(deployment.found)
            properties.append(
                report_run.deployment_property(from_deployment(deployment, request.node.nodeid))
            )
            session.stops.submit(deployment.namespace, deployment.stop)
    if failures:
        raise failures[0]


def _probe(deployment: Deployment) -> None:
    """After a failed readiness, what clients would get: each of the topology's requests,
    once, answers recorded (a 200 here beside a worker with no card is the #4486 shape)."""
    for kind in deployment.topology.requests:
        try:
            deployment.send(kind)
        except Exception as error:  # a refused connection is an answer too, for the history
            deployment.replies.append(Reply(kind, "", 0, f"no answer: {error}", ""))


# -- an infra of its own (edge tests that restart or pause etcd and NATS) --------------------
@dataclass
class IsolatedInfra:
    """etcd, NATS, frontend and observer for one test module, away from the session's: a
    restart of etcd there cannot disturb any other test. Workers start fresh (the session's
    template has the session's etcd address frozen in)."""

    provider: LocalProcessProvider
    endpoints: Endpoints
    session: Session


@pytest.fixture(scope="module")
def isolated_infra(
    harness_settings: Settings,
    models: ModelSource,
    tmp_path_factory: pytest.TempPathFactory,
    harness_scratch: Path,
) -> Iterator[IsolatedInfra]:
    if not harness_settings.tier.fault_injection:
        pytest.skip("infra disruptions run on the CPU tier (local etcd and nats-server)")
    workdir = tmp_path_factory.mktemp("isolated")
    provider = LocalProcessProvider()
    endpoints = provider.start(workdir / "infra")
    observer = DiscoveryObserver(endpoints.etcd).start()
    frontend = start_frontend(endpoints, workdir, harness_scratch, harness_settings.tier)
    settings = dataclasses.replace(harness_settings, spawn=spawn.FRESH)
    session = Session(
        endpoints, frontend, observer, models.path_for, workdir, settings, harness_scratch
    )
    try:
        yield IsolatedInfra(provider, endpoints, session)
    finally:
        session.stops.drain()
        frontend.proc.stop(grace=10)
        observer.stop()
        provider.stop()


@pytest.fixture
def isolated_deploy(
    isolated_infra: IsolatedInfra, request: pytest.FixtureRequest
) -> Iterator[DeployFn]:
    """`deploy`, against the module's isolated infra."""
    yield from _deployer(isolated_infra.session, request)


def _record_timeline(request: pytest.FixtureRequest, deployment: Deployment) -> None:
    """Into the test's report (JUnit properties, and xdist carries them to the controller)."""
    properties = request.node.user_properties
    for row in deployment.timeline():
        properties.append((TIMELINE_ROW, row.row()))
        for step, offset in row.offsets().items():
            properties.append((f"timeline.{row.role}.{step}_s", offset))
    for violation, reason in deployment.known_seen:
        observed = " ".join(violation.message.split())[:600]
        properties.append((KNOWN_VIOLATION, f"[{violation.kind}] {reason}; observed: {observed}"))
