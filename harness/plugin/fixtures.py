"""Session fixtures: infra (etcd, NATS), the discovery observer, models, the worker template
and the deployment session every `deploy` shares."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.deployment import Session, Settings
from harness.discovery.observer import DiscoveryObserver
from harness.plugin.session import GPU_SHARE_KEY, PROGRESS_KEY, SPAWN_KEY, chosen_tier
from harness.processes.infra import Endpoints, select_provider
from harness.runtime import spawn
from harness.runtime.frontend import start_frontend
from harness.runtime.launch import template_env
from harness.runtime.model_source import ModelSource, model_source

ROOT = Path(__file__).resolve().parents[2]


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
