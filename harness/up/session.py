"""A deployment session outside pytest: infra, observer, frontend and (CPU tier) the worker
template, built as the plugin's session fixtures build them, stopped in reverse order."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from harness.deployment import Session, Settings
from harness.discovery.observer import DiscoveryObserver
from harness.processes.infra import select_provider
from harness.runtime import spawn
from harness.runtime.frontend import start_frontend
from harness.runtime.launch import template_env
from harness.runtime.model_source import model_source

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def standalone_session(infra: str, settings: Settings, workdir: Path) -> Iterator[Session]:
    """Everything a Deployment needs; all of it stopped (last started, first stopped) when
    the block ends, whatever ended it."""
    with contextlib.ExitStack() as stack:
        scratch = Path(tempfile.mkdtemp(prefix="dh-"))
        stack.callback(shutil.rmtree, scratch, ignore_errors=True)
        provider = select_provider(infra)
        endpoints = provider.start(workdir / "infra")
        stack.callback(provider.stop)
        observer = DiscoveryObserver(endpoints.etcd).start()
        stack.callback(observer.stop)
        zygote = None
        if settings.spawn == spawn.ZYGOTE:
            env = template_env(endpoints.etcd, endpoints.nats, scratch / "hf", scratch / "zygote")
            zygote = spawn.Zygote(env, workdir / "zygote.log", ROOT).start()
            stack.callback(zygote.stop)
        frontend = start_frontend(endpoints, workdir, scratch, settings.tier)
        stack.callback(frontend.proc.stop, 10)
        models = model_source(settings.tier, [], workdir / "models")
        session = Session(
            endpoints,
            frontend,
            observer,
            models.path_for,
            workdir,
            settings,
            scratch,
            spawner=zygote,
        )
        stack.callback(session.stops.drain)
        yield session
