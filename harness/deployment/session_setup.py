"""Setting up what deployments share, written once: infra (etcd, NATS), the discovery
observer, the worker template, the session's frontend, and the Session over them.

Each part starts one thing and puts its stop on the caller's ExitStack, so parts stop in
reverse order whatever ended the block. The pytest fixtures take the parts one by one (each is
a fixture of its own); `standalone_session` takes them all at once for `up`, the benchmark, a
test module's isolated infra and anything else that needs a session of its own.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from discovery_harness.deployment.options import Settings
from discovery_harness.deployment.session import Session
from discovery_harness.discovery.observer import DiscoveryObserver
from discovery_harness.processes.infra import Endpoints, Provider, select_provider
from discovery_harness.runtime import spawn
from discovery_harness.runtime.frontend import Frontend, start_frontend
from discovery_harness.runtime.launch import template_env
from discovery_harness.runtime.model_source import model_source


def scratch_dir(stack: contextlib.ExitStack) -> Path:
    """A short private temp root for worker TMPDIRs (sglang's IPC socket paths must fit 107
    bytes), removed at the end."""
    path = Path(tempfile.mkdtemp(prefix="dh-"))
    stack.callback(shutil.rmtree, path, ignore_errors=True)
    return path


def start_infra(stack: contextlib.ExitStack, provider: Provider, workdir: Path) -> Endpoints:
    endpoints = provider.start(workdir / "infra")
    stack.callback(provider.stop)
    return endpoints


def start_observer(stack: contextlib.ExitStack, endpoints: Endpoints) -> DiscoveryObserver:
    observer = DiscoveryObserver(endpoints.etcd).start()
    stack.callback(observer.stop)
    return observer


def start_template(stack: contextlib.ExitStack, workdir: Path, scratch: Path) -> spawn.Zygote:
    """The pre-imported CPU worker template; started, not waited for (its imports overlap
    the frontend's start). Other sessions may join it at its socket (spawn.Zygote.join)."""
    env = template_env(scratch / "hf", scratch / "zygote")
    address = scratch / "template.sock"
    zygote = spawn.Zygote(env, workdir / "zygote.log", workdir, address=address).start()
    stack.callback(zygote.stop)
    return zygote


def start_session_frontend(
    stack: contextlib.ExitStack,
    endpoints: Endpoints,
    workdir: Path,
    scratch: Path,
    settings: Settings,
) -> Frontend:
    frontend = start_frontend(endpoints, workdir, scratch, settings.tier)
    stack.callback(frontend.proc.stop, 10)
    return frontend


def assemble(
    stack: contextlib.ExitStack,
    *,
    endpoints: Endpoints,
    frontend: Frontend,
    observer: DiscoveryObserver,
    models: Callable[[str, str], str],
    workdir: Path,
    settings: Settings,
    scratch: Path,
    spawner: spawn.Zygote | None = None,
    gpu_share: tuple[str, ...] = (),
    progress: Callable[[str], None] | None = None,
    progress_heartbeat_s: float = 30.0,
) -> Session:
    """The Session over the parts; the block's end waits for every deployment's stop."""
    session = Session(
        endpoints,
        frontend,
        observer,
        models,
        workdir,
        settings,
        scratch,
        gpu_share=gpu_share,
        progress=progress,
        progress_heartbeat_s=progress_heartbeat_s,
        spawner=spawner,
    )
    stack.callback(session.stops.drain)
    stack.callback(session.prestarts.release)  # before the drain: stopped too
    return session


@contextlib.contextmanager
def standalone_session(
    infra: str | Provider,
    settings: Settings,
    workdir: Path,
    models: Callable[[str, str], str] | None = None,
) -> Iterator[Session]:
    """Everything a Deployment needs, outside pytest; all of it stopped (last started, first
    stopped) when the block ends, whatever ended it. `infra`: a provider or its name."""
    with contextlib.ExitStack() as stack:
        scratch = scratch_dir(stack)
        provider = select_provider(infra) if isinstance(infra, str) else infra
        endpoints = start_infra(stack, provider, workdir)
        observer = start_observer(stack, endpoints)
        zygote = None
        if settings.spawn == spawn.ZYGOTE:
            zygote = start_template(stack, workdir, scratch)
        frontend = start_session_frontend(stack, endpoints, workdir, scratch, settings)
        if models is None:
            models = model_source(settings.tier, [], workdir / "models").path_for
        yield assemble(
            stack,
            endpoints=endpoints,
            frontend=frontend,
            observer=observer,
            models=models,
            workdir=workdir,
            settings=settings,
            scratch=scratch,
            spawner=zygote,
        )
