"""The pytest plugin: options, markers, session infrastructure, the `deploy` fixture, reports.

Registered through the `pytest11` entry point (and loaded by the project's conftest), so
any test can ask for `deploy` and get a topology running against real etcd, NATS, the real
frontend and real dynamo.sglang workers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.assets import cpu_assets, gpu_assets
from harness.deploy import Deployment, Session, Settings
from harness.frontend import start_frontend
from harness.infra import PROVIDERS, Endpoints, select_provider
from harness.observer import DiscoveryObserver
from harness.processes import install_cleanup_handlers
from harness.timeline import HEADER
from harness.topology import Topology

MARKERS = {
    "sglang": "exercises dynamo.sglang workers",
    "multimodal": "multimodal topologies (encoder + PD / P / D)",
    "e2e": "end to end: real etcd, NATS, frontend and workers",
    "unit": "the harness's own unit tests (no processes)",
    "gpu_0": "CPU tier: needs no GPU",
    "gpu_1": "GPU tier: needs one GPU",
    "gpu_2": "GPU tier: needs two or more GPUs",
    "pre_merge": "runs on every change",
    "nightly": "the long matrix; skipped unless selected with -m",
    "selftest": "fault-injection self-tests of the harness's own checks",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("discovery-harness")
    group.addoption(
        "--infra",
        default=os.environ.get("HARNESS_INFRA", "auto"),
        choices=["auto", *PROVIDERS],
        help="where etcd and NATS come from (default: external, docker, process)",
    )
    group.addoption(
        "--tier",
        default="cpu",
        choices=["cpu", "gpu"],
        help="cpu: CPU stand-ins for sglang's GPU classes; gpu: real engines",
    )
    group.addoption(
        "--model",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="GPU tier model per asset key (text, vision-language, ...)",
    )
    group.addoption(
        "--register-deadline",
        type=float,
        default=120.0,
        help="seconds for each worker to serve and register (default 120)",
    )
    group.addoption(
        "--card-grace",
        type=float,
        default=20.0,
        help="seconds a serving worker may lack its card once all peers serve",
    )
    group.addoption(
        "--inject-fault",
        action="append",
        default=[],
        metavar="ROLE=FAULT",
        help="CPU tier: run ROLE with a fault (see workers/faults.py) in every topology that "
        "has that role, to see what the harness reports",
    )
    group.addoption(
        "--list-deadline",
        type=float,
        default=30.0,
        help="seconds from registration to the model in /v1/models",
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    config.pluginmanager.register(_RunReport(), "discovery-harness-report")
    install_cleanup_handlers()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Self-tests run only when -m names them (or, for pre_merge ones, with no -m at all);
    nightly items only when -m is given."""
    expression = config.getoption("markexpr") or ""
    tier = config.getoption("tier")
    keep, drop = [], []
    for item in items:
        _mark_hardware(item, tier)
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


def _mark_hardware(item: pytest.Item, tier: str) -> None:
    """gpu_0 on the CPU tier; on the GPU tier gpu_1 or gpu_2 by how many workers run."""
    if item.get_closest_marker("e2e") is None:
        return
    topology = getattr(item, "callspec", None) and item.callspec.params.get("topology")
    if tier == "cpu":
        item.add_marker(pytest.mark.gpu_0)
    elif isinstance(topology, Topology):
        item.add_marker(pytest.mark.gpu_1 if len(topology.workers) == 1 else pytest.mark.gpu_2)


def topology_param(topology: Topology, *extra_marks: pytest.MarkDecorator) -> object:
    marks = [getattr(pytest.mark, m) for m in topology.marks]
    marks.append(pytest.mark.timeout(topology.timeout_s))
    return pytest.param(topology, id=topology.name, marks=[*marks, *extra_marks])


# -- session fixtures ------------------------------------------------------------------------
@pytest.fixture(scope="session")
def harness_settings(pytestconfig: pytest.Config) -> Settings:
    return Settings(
        tier=pytestconfig.getoption("tier"),
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
def model_assets(pytestconfig: pytest.Config, harness_workdir: Path) -> dict[str, Path]:
    if pytestconfig.getoption("tier") == "gpu":
        return gpu_assets(pytestconfig.getoption("model"))
    return cpu_assets(harness_workdir / "models")


@pytest.fixture(scope="session")
def harness_session(
    infra_endpoints: Endpoints,
    discovery_observer: DiscoveryObserver,
    model_assets: dict[str, Path],
    harness_settings: Settings,
    harness_workdir: Path,
    harness_scratch: Path,
) -> Iterator[Session]:
    frontend = start_frontend(infra_endpoints, harness_workdir, harness_scratch)
    try:
        yield Session(
            infra_endpoints,
            frontend,
            discovery_observer,
            model_assets,
            harness_workdir,
            harness_settings,
            harness_scratch,
        )
    finally:
        frontend.proc.stop(grace=10)


# -- the deploy fixture ----------------------------------------------------------------------
DeployFn = Callable[..., Deployment]


@pytest.fixture
def deploy(harness_session: Session, request: pytest.FixtureRequest) -> Iterator[DeployFn]:
    """`deploy(topology, faults={role: fault}, fault_delay_s=0)`: start it and wait until
    it is ready (raises ContractFailure otherwise). Everything started is stopped after."""
    started: list[Deployment] = []
    injected = dict(pair.split("=", 1) for pair in request.config.getoption("inject_fault"))

    def _deploy(
        topology: Topology,
        faults: dict[str, str] | None = None,
        fault_delay_s: float = 0.0,
        strict: bool = False,
    ) -> Deployment:
        if faults is None:
            roles = {w.role for w in topology.workers}
            faults = {role: fault for role, fault in injected.items() if role in roles}
        if faults and harness_session.settings.tier != "cpu":
            pytest.skip("fault injection needs the CPU tier")
        deployment = Deployment(topology, harness_session, faults, fault_delay_s, strict)
        started.append(deployment)
        return deployment.start().await_ready()

    try:
        yield _deploy
    finally:
        for deployment in started:
            _record_timeline(request, deployment)
            deployment.stop()


def _record_timeline(request: pytest.FixtureRequest, deployment: Deployment) -> None:
    """Into the test's report (JUnit properties, and xdist carries them to the controller)."""
    properties = request.node.user_properties
    for row in deployment.timeline():
        properties.append((TIMELINE_ROW, row.row()))
        for step, offset in row.offsets().items():
            properties.append((f"timeline.{row.role}.{step}_s", offset))
    for violation, reason in deployment.known_seen:
        properties.append((KNOWN_VIOLATION, f"[{violation.kind}] {reason}"))


TIMELINE_ROW, KNOWN_VIOLATION = "timeline_row", "known_violation"


class _RunReport:
    """Collects timelines and known violations from every test report, on the controller."""

    def __init__(self) -> None:
        self.timelines: list[tuple[str, str]] = []
        self.known: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == TIMELINE_ROW:
                self.timelines.append((report.nodeid, str(value)))
            elif name == KNOWN_VIOLATION:
                self.known.append((report.nodeid, str(value)))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.known:
            terminalreporter.section("known violations of this Dynamo release (not failed)")
            for nodeid, text in self.known:
                terminalreporter.write_line(f"{nodeid}: {text}")
        if self.timelines:
            terminalreporter.section("registration timeline (seconds after each process start)")
            terminalreporter.write_line(f"{'test':<60} {HEADER}")
            for nodeid, row in self.timelines:
                terminalreporter.write_line(f"{nodeid[-60:]:<60} {row}")
