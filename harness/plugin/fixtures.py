"""Session fixtures: infra (etcd, NATS), the discovery observer, models, the worker template
and the deployment session every `deploy` shares."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from discovery_harness.deployment import Session, Settings
from discovery_harness.deployment import session_setup as setup
from discovery_harness.discovery.observer import DiscoveryObserver
from discovery_harness.plugin import options, scope, shared_template
from discovery_harness.plugin.session import GPU_SHARE_KEY, PROGRESS_KEY, SPAWN_KEY, chosen_tier
from discovery_harness.processes.infra import Endpoints, select_provider
from discovery_harness.runtime import spawn
from discovery_harness.runtime.model_source import ModelSource, model_source


@pytest.fixture(autouse=True)
def _process_environment_kept(request: pytest.FixtureRequest) -> Iterator[None]:
    """What a test (or a library it loads: torch sets TORCHINDUCTOR_CACHE_DIR when it loads a
    model) leaves in os.environ ends with the test. Every process the harness starts inherits
    os.environ, and a forked worker must match the template in what it read at import: without
    this, a worker's environment would depend on which tests ran before it (and so on xdist's
    scheduling). Session fixtures are set up before this snapshot, so theirs stays. Another
    suite's tests are left as they are (plugin.scope)."""
    if not scope.is_marked_own(request.node):
        yield
        return
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
        register_deadline_s=options.value(pytestconfig, "register_deadline"),
        card_grace_s=options.value(pytestconfig, "card_grace"),
        list_deadline_s=options.value(pytestconfig, "list_deadline"),
    )


@pytest.fixture(scope="session")
def harness_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("harness")


@pytest.fixture(scope="session")
def harness_scratch() -> Iterator[Path]:
    """A short private temp root for worker TMPDIRs (IPC socket paths are length-limited)."""
    with contextlib.ExitStack() as stack:
        yield setup.scratch_dir(stack)


@pytest.fixture(scope="session")
def infra_endpoints(pytestconfig: pytest.Config, harness_workdir: Path) -> Iterator[Endpoints]:
    with contextlib.ExitStack() as stack:
        provider = select_provider(options.value(pytestconfig, "infra"))
        yield setup.start_infra(stack, provider, harness_workdir)


@pytest.fixture(scope="session")
def discovery_observer(infra_endpoints: Endpoints) -> Iterator[DiscoveryObserver]:
    with contextlib.ExitStack() as stack:
        yield setup.start_observer(stack, infra_endpoints)


@pytest.fixture(scope="session")
def models(pytestconfig: pytest.Config, harness_workdir: Path) -> ModelSource:
    return model_source(
        chosen_tier(pytestconfig), options.value(pytestconfig, "model"), harness_workdir / "models"
    )


@pytest.fixture(scope="session")
def worker_template(
    pytestconfig: pytest.Config, harness_workdir: Path, harness_scratch: Path
) -> Iterator[spawn.Zygote | None]:
    """The pre-imported CPU worker template (`--spawn zygote`), or None (fresh processes):
    under xdist the run's, which the controller started (plugin.shared_template); else
    started here and not waited for: its imports overlap the infra's and frontend's start."""
    if pytestconfig.stash[SPAWN_KEY] != spawn.ZYGOTE:
        yield None
        return
    with contextlib.ExitStack() as stack:
        guest = shared_template.joined(pytestconfig, harness_workdir)
        if guest is not None:
            stack.callback(guest.stop)
            yield guest
            return
        yield setup.start_template(stack, harness_workdir, harness_scratch)


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
    with contextlib.ExitStack() as stack:
        frontend = setup.start_session_frontend(
            stack, infra_endpoints, harness_workdir, harness_scratch, harness_settings
        )
        yield setup.assemble(
            stack,
            endpoints=infra_endpoints,
            frontend=frontend,
            observer=discovery_observer,
            models=models.path_for,
            workdir=harness_workdir,
            settings=harness_settings,
            scratch=harness_scratch,
            spawner=worker_template,
            gpu_share=pytestconfig.stash[GPU_SHARE_KEY],
            progress=pytestconfig.stash[PROGRESS_KEY],
            progress_heartbeat_s=options.value(pytestconfig, "progress_heartbeat"),
        )
