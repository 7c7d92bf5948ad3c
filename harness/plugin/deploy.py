"""The `deploy` fixture (and `isolated_deploy`, against an infra of the test module's own):
start a topology, wait until it is ready, give every deployment a verdict and stop it."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from discovery_harness.deployment import Deployment, Session, Settings, prestart, whole_contract
from discovery_harness.deployment import session_setup as setup
from discovery_harness.history import record
from discovery_harness.model.topology import Scenario, Topology
from discovery_harness.model.violations import ContractFailure, ContractFailures
from discovery_harness.plugin.options import value as option_value
from discovery_harness.plugin.session import FAULTS_KEY
from discovery_harness.plugin.upcoming import upcoming_items
from discovery_harness.processes.infra import Endpoints
from discovery_harness.processes.infra.local_process import LocalProcessProvider
from discovery_harness.report import pytest_run as report_run
from discovery_harness.report.observed import from_deployment
from discovery_harness.report.pytest_run import KNOWN_VIOLATION, TIMELINE_ROW
from discovery_harness.runtime import spawn
from discovery_harness.runtime.model_source import ModelSource
from discovery_harness.serving.requests import Reply

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
            faults = _faults_for(topology, injected)
        if faults and not session.settings.tier.fault_injection:
            pytest.skip("fault injection needs the CPU tier")
        ahead = None
        if isinstance(what, Scenario) and not options:
            ahead = session.prestarts.take(prestart.key_of(what, faults))
        deployment = ahead or Deployment(what, session, faults=faults, **options)
        started.append(deployment)
        try:
            ready = (deployment if ahead else deployment.start()).await_ready()
        except spawn.TemplateImportFailed as unimportable:  # every test would meet it
            pytest.exit(str(unimportable), returncode=pytest.ExitCode.USAGE_ERROR)
        except ContractFailure:
            if option_value(request.config, "probe_after_failure"):
                _probe(deployment)
            raise
        _start_upcoming(session, request, injected)
        return ready

    __tracebackhide__ = True
    failures: list[ContractFailure] = []
    try:
        yield _Deploy(_deploy)
    finally:
        with contextlib.ExitStack() as stops:  # every one stopped, whatever raised
            for deployment in started:
                stops.callback(deployment.stop_in_background)
            for deployment in started:
                failure = _verdict_at_teardown(deployment)
                if failure is not None:
                    failures.append(failure)
                _record(request, deployment)
    if failures:
        raise ContractFailures.of(failures)


def _faults_for(topology: Topology, injected: dict[str, str]) -> dict[str, str]:
    roles = {w.role for w in topology.workers}
    return {role: fault for role, fault in injected.items() if role in roles}


def _start_upcoming(
    session: Session, request: pytest.FixtureRequest, injected: dict[str, str]
) -> None:
    """Start the deployments of the next items marked `prestart` (harness/deployment/
    prestart.py) this process will run: the session's order, or under xdist what the
    controller has queued for this worker so far. Not on the GPU tier (a deployment holds
    GPUs) nor without the template (a start costs seconds of CPU)."""
    if session.spawner is None or not session.settings.tier.fault_injection:  # CPU tier
        return
    for item in upcoming_items(request)[: prestart.DEPTH]:
        callspec = getattr(item, "callspec", None)
        scenario = callspec.params.get("scenario") if callspec is not None else None
        if item.get_closest_marker("prestart") is None or not isinstance(scenario, Scenario):
            continue
        faults = _faults_for(scenario.topology, injected)
        session.prestarts.ahead(
            prestart.key_of(scenario, faults),
            functools.partial(Deployment, scenario, session, faults=faults),
        )


def _verdict_at_teardown(deployment: Deployment) -> ContractFailure | None:
    """The failure to report at teardown: the verdict of a deployment whose test body never
    reached one (no verify(), or it raised first). Every failing deployment's is reported."""
    unseen = not deployment.judged
    verdict = deployment.verdict()
    if unseen and verdict.violations:
        return ContractFailure(deployment.plan.topology.name, list(verdict.violations))
    return None


def _record(request: pytest.FixtureRequest, deployment: Deployment) -> None:
    """The deployment's timeline, answers, violations and report entry, into the test's
    report (JUnit properties; xdist carries them to the controller)."""
    _record_timeline(request, deployment)
    properties = request.node.user_properties
    properties += record.reply_properties(deployment.replies)
    properties += record.violation_properties(deployment.found)
    properties.append(record.judged_property(whole_contract.judged(deployment)))
    properties.append(
        report_run.deployment_property(from_deployment(deployment, request.node.nodeid))
    )


def _probe(deployment: Deployment) -> None:
    """After a failed readiness, what clients would get: each of the topology's requests,
    once, answers recorded (a 200 here beside a worker with no card is the #4486 shape)."""
    for kind in deployment.plan.topology.requests:
        try:
            deployment.send(kind)
        except Exception as error:  # a refused connection is an answer too, for the history
            deployment.replies.append(Reply(kind, "", 0, f"no answer: {error}", ""))


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
    harness_settings: Settings, models: ModelSource, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IsolatedInfra]:
    if not harness_settings.tier.fault_injection:
        pytest.skip("infra disruptions run on the CPU tier (local etcd and nats-server)")
    workdir = tmp_path_factory.mktemp("isolated")
    provider = LocalProcessProvider()
    settings = dataclasses.replace(harness_settings, spawn=spawn.FRESH)
    with setup.standalone_session(provider, settings, workdir, models.path_for) as session:
        yield IsolatedInfra(provider, session.endpoints, session)


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
        # the topology first (the terminal's timeline names rows by it), then the row
        properties.append((TIMELINE_ROW, f"{deployment.plan.topology.name} {row.row()}"))
        for step, offset in row.offsets().items():
            properties.append((f"timeline.{row.role}.{step}_s", offset))
    for violation, reason in deployment.known_seen:  # whole here; the terminal cuts it
        observed = " ".join(violation.message.split())
        properties.append((KNOWN_VIOLATION, f"[{violation.kind}] {reason}; observed: {observed}"))
