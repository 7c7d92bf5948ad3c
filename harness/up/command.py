"""`python -m discovery_harness up TOPOLOGY [--inject-fault ROLE=FAULT] [--infra ...] [--env-file
F]`.

Starts the topology (infra, frontend, workers) with the tests' own code, prints where
everything is, writes the env file once readiness is decided (served, or failed with the
violations printed: an injected fault is the point when auditing), then stays up until
Ctrl-C or SIGTERM and stops everything.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from discovery_harness.common.exits import USAGE_ERROR
from discovery_harness.deployment import Deployment, Settings
from discovery_harness.deployment.session_setup import standalone_session
from discovery_harness.deployment.worker import Worker
from discovery_harness.model import catalogue as catalogue_module
from discovery_harness.model.topology import Topology
from discovery_harness.model.violations import ContractFailure
from discovery_harness.processes import ports
from discovery_harness.processes.infra import PROVIDERS, InfraUnavailable
from discovery_harness.processes.managed import install_cleanup_handlers
from discovery_harness.runtime import dynamo_env, dynamo_fit, dynamo_src, spawn, tier, usage


def add_parser(commands: argparse._SubParsersAction) -> None:
    up = commands.add_parser(
        "up", help="start one topology and keep it up until Ctrl-C (to poke at, or to audit)"
    )
    up.add_argument("topology", help="a topology of the catalogue (python -m discovery_harness "
                                     "topologies)")
    up.add_argument("--inject-fault", action="append", default=[], metavar="ROLE=FAULT")
    up.add_argument("--fault-delay", type=float, default=0.0, help="delayed-registration's s")
    up.add_argument("--infra", default="auto", choices=["auto", *PROVIDERS])
    up.add_argument("--tier", default="auto", choices=["auto", *tier.TIERS])
    up.add_argument("--spawn", default="auto", choices=["auto", *spawn.SPAWN_MODES])
    up.add_argument("--port-range", default=os.environ.get("HARNESS_PORT_RANGE"))
    up.add_argument(
        "--dynamo-src",
        default=os.environ.get(dynamo_src.ENV_VARIABLE),
        metavar="DIR",
        help="run a Dynamo checkout's components/src over the release environment that fits "
        "it (env HARNESS_DYNAMO_SRC; docs/your-checkout.md)",
    )
    up.add_argument("--workdir", default=None, help="logs and infra data (default: a temp dir)")
    up.add_argument(
        "--env-file",
        default=None,
        help="write ETCD_ENDPOINTS, NATS_SERVER, FRONTEND_URL, NAMESPACE, MODEL (and "
        "HARNESS_VERDICT) as shell variables here once readiness is decided",
    )


class StopRequest:
    """SIGINT or SIGTERM asks `up` to stop. The handler only records it, taking no lock: a
    handler runs between two bytecodes of the main thread, maybe inside a lock that thread
    holds (threading.Event.set from a handler can deadlock on the Event's own lock)."""

    def __init__(self) -> None:
        self.signals: list[int] = []

    def __call__(self, signum: int, _frame: object) -> None:
        self.signals.append(signum)

    def wait(self, poll_s: float = 0.2) -> None:
        """Until a stop is asked for (a sleep is cut short by a signal, then resumed)."""
        while not self.signals:
            time.sleep(poll_s)


class _Prepared(NamedTuple):
    topology: Topology
    faults: dict[str, str]
    tier: tier.TierPolicy
    spawn_mode: str


def up_command(args: argparse.Namespace) -> int:
    stop = StopRequest()
    try:
        # SIGINT is Ctrl-C from the very start (cli.app.main takes it even when a script's
        # `&` handed it ignored): until the stop handler is in, it ends `up`, nothing started.
        prepared = _prepare(args)
        install_cleanup_handlers()  # atexit: nothing left even on an unexpected exit
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, stop)  # from here on a stop request: all started, stopped whole
    except KeyboardInterrupt:
        print("harness up: interrupted before anything started", file=sys.stderr, flush=True)
        return 130
    except (KeyError, ValueError, LookupError) as bad:
        print(f"harness up: {bad.args[0] if bad.args else bad}", file=sys.stderr, flush=True)
        return USAGE_ERROR
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="harness-up-"))
    settings = Settings(tier=prepared.tier, spawn=prepared.spawn_mode)
    try:
        with (
            standalone_session(args.infra, settings, workdir) as session,
            Deployment(
                prepared.topology,
                session,
                faults=prepared.faults,
                fault_delay_s=args.fault_delay,
                strict=True,
            ) as deployment,
        ):
            verdict = _start(deployment)
            _announce(deployment, verdict, args.env_file)
            stop.wait()
            print("harness up: stopping ...", flush=True)
    except (InfraUnavailable, spawn.TemplateImportFailed) as missing:
        print(f"harness up: {missing}", file=sys.stderr, flush=True)
        return USAGE_ERROR
    print("harness up: stopped; every process it started has exited", flush=True)
    return 0


def _prepare(args: argparse.Namespace) -> _Prepared:
    """What to start, checked before anything starts (bad input: KeyError, ValueError,
    LookupError)."""
    catalogue = catalogue_module.load()
    chosen = tier.choose(args.tier).tier
    lines: list[str] = []
    if args.dynamo_src:
        _, lines = dynamo_fit.use(args.dynamo_src, os.environ.get(dynamo_env.ENV_VARIABLE))
    for line in [*lines, *dynamo_fit.probe_before_start(chosen)]:
        print(f"harness up: {line}", flush=True)
    version = dynamo_env.active().version
    topology = catalogue.topology(args.topology).for_release(version)
    faults = usage.injected_faults(args.inject_fault, catalogue)
    strangers = sorted(set(faults) - {w.role for w in topology.workers})
    if strangers:
        raise ValueError(f"--inject-fault: {topology.name} has no role {strangers}")
    if faults and not chosen.fault_injection:
        raise ValueError("--inject-fault needs the CPU tier (faults live in its launcher)")
    if args.port_range:
        ports.use_range(args.port_range)
    mode = spawn.spawn_mode(args.spawn, chosen, dynamo_env.active().own)
    return _Prepared(topology, faults, chosen, mode)


def _start(deployment: Deployment) -> str:
    deployment.start()
    try:
        deployment.await_ready()
    except ContractFailure as failure:
        print(f"harness up: NOT conformant (left running as it is):\n{failure}", flush=True)
        return "violations"
    return "conformant"


def _system_url(worker: Worker) -> str:
    """The worker's system server (its /health, /live, /metrics)."""
    return f"http://127.0.0.1:{worker.ports.system}"


def _announce(deployment: Deployment, verdict: str, env_file: str | None) -> None:
    session = deployment.session
    frontend = deployment.client.base_url
    lines = [
        f"harness up: {deployment.plan.topology.name} is up ({verdict})",
        f"  frontend   {frontend}",
        f"  etcd       {session.endpoints.etcd}",
        f"  nats       {session.endpoints.nats}",
        f"  namespace  {deployment.plan.namespace}",
        f"  model      {deployment.plan.model_name}",
        *(
            f"  worker     {w.role:<16} pid {w.pid:<8} log {w.proc.log_path}"
            f"\n             /health {_system_url(w)}/health"
            for w in deployment.processes.workers
        ),
        f"  audit it:  python -m discovery_harness audit --etcd {session.endpoints.etcd} "
        f"--frontend {frontend} --namespace {deployment.plan.namespace}"
        + "".join(f" --worker-health {_system_url(w)}" for w in deployment.processes.workers),
        "  Ctrl-C (or SIGTERM) stops everything",
    ]
    if env_file:
        values = {
            "ETCD_ENDPOINTS": session.endpoints.etcd,
            "NATS_SERVER": session.endpoints.nats,
            "FRONTEND_URL": frontend,
            "NAMESPACE": deployment.plan.namespace,
            "MODEL": deployment.plan.model_name,
            "HARNESS_VERDICT": verdict,
        }
        partial = Path(f"{env_file}.partial")
        partial.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
        partial.replace(env_file)  # appears whole: a script waiting for it reads it complete
    # Announced once the env file is in place: whoever reads the announcement finds it.
    print("\n".join(lines), flush=True)
