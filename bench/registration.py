"""Benchmark: harness overhead, detection latency and suite wall times, printed side by side.

    .venv/bin/python -m bench.registration [--topologies aggregated,mm-encode-pd] [--repeat 2]
                                           [--latency-samples 50] [--suites default,full]

(a) start-to-listed of the same workers launched bare (plain Popen, /v1/models polled) and
    through the harness (Deployment: watch-based registration wait, listing, a served request);
(b) detection latency: a card key written to etcd until the observer's wait returns;
(c) wall time of the default suite and of the full matrix, serial and with `-n 2`.
Nothing here asserts: it prints figures for the README and the team's notes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

from harness.deadline import Deadline
from harness.deploy import Deployment, Session, Settings
from harness.frontend import start_frontend
from harness.infra.local_process import LocalProcessProvider
from harness.loopback import ProcessPorts
from harness.model_source import TinyModels
from harness.observer import DiscoveryObserver
from harness.processes import ManagedProcess, stop_all
from harness.runtime.launch import WorkerSite, worker_command
from harness.topology import Scenario, Topology
from scenarios.catalogue import by_name

ROOT = Path(__file__).resolve().parent.parent


def bare_start_to_listed(session: Session, topology: Topology, tag: str) -> float:
    """The same workers with no harness around them: Popen, then poll /v1/models."""
    model = f"bare-{tag}"
    namespace = f"bare-{tag}"
    procs = []
    started = time.monotonic()
    for index, spec in enumerate(topology.workers):
        site = WorkerSite(
            namespace=namespace,
            model_name=model,
            ports=ProcessPorts.allocate(),
            etcd=session.endpoints.etcd,
            nats=session.endpoints.nats,
            tmpdir=session.scratch / f"b{tag}{index}",
            media_dir=session.workdir / "media",
            hf_home=session.hf_home,
        )
        command = worker_command(
            "cpu",
            Scenario.packed(topology),
            spec,
            model_path=session.models(topology.name, spec.model),
            site=site,
            timeout_s=180,
        )
        procs.append(
            ManagedProcess(
                spec.role,
                list(command.argv),
                command.environment(),
                session.workdir / "bench" / f"{tag}-{spec.role}.log",
                cwd=ROOT,
            ).start()
        )
    try:
        deadline = Deadline(180)
        with httpx.Client(base_url=session.frontend.base_url, timeout=2) as client:
            while not deadline.expired:
                models = client.get("/v1/models").json().get("data", [])
                if any(m.get("id") == model for m in models):
                    return time.monotonic() - started
                procs[0].popen_wait(0.05)
        raise TimeoutError(f"{topology.name} never listed")
    finally:
        stop_all(procs)


def harness_start_to_listed(session: Session, topology: Topology) -> tuple[float, float]:
    """(start -> listed, start -> ready) through Deployment."""
    deployment = Deployment(topology, session)
    started = time.time()
    try:
        deployment.start().await_ready()
        ready = time.time() - started
        listed = (deployment.timeline()[0].listed_at or time.time()) - started
        return listed, ready
    finally:
        deployment.stop()


def detection_latency(observer: DiscoveryObserver, samples: int) -> list[float]:
    latencies = []
    for index in range(samples):
        key = f"v1/mdc/bench-latency/backend/generate/{index:x}"
        value = json.dumps({"instance_id": index, "card_json": {"display_name": "x"}})
        written = time.monotonic()
        observer.client.put(key, value)
        observer.wait_for(lambda s, k=key: k in s.raw, Deadline(5))
        latencies.append(time.monotonic() - written)
    observer.client.delete_prefix("v1/mdc/bench-latency/")
    return latencies


SUITES = {
    "default": [],
    "full": ["-m", "e2e or unit or selftest or nightly"],
}


def suite_wall_time(name: str, parallel: bool) -> tuple[float, str]:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITES[name]]
    if parallel:
        args += ["-n", "2"]
    started = time.monotonic()
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    tail = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "?"
    return time.monotonic() - started, tail


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--topologies", default="aggregated,mm-encode-pd")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--latency-samples", type=int, default=50)
    parser.add_argument("--suites", default="", help="comma list of: default, full")
    args = parser.parse_args()

    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="db-")))
        provider = LocalProcessProvider()
        endpoints = provider.start(workdir / "infra")
        stack.callback(provider.stop)
        observer = DiscoveryObserver(endpoints.etcd).start()
        stack.callback(observer.stop)
        frontend = start_frontend(endpoints, workdir, scratch)
        stack.callback(frontend.proc.stop)
        session = Session(
            endpoints,
            frontend,
            observer,
            TinyModels(workdir / "models").path_for,
            workdir,
            Settings(),
            scratch,
        )

        print("(a) start-to-listed, bare vs through the harness (median of runs)")
        print(f"{'topology':<18} {'bare':>8} {'harness':>8} {'ratio':>6} {'ready':>8}")
        for name in args.topologies.split(","):
            topology = by_name(name)
            bare, listed, ready = [], [], []
            for run in range(args.repeat):
                bare.append(bare_start_to_listed(session, topology, f"{name[:8]}{run}"))
                through = harness_start_to_listed(session, topology)
                listed.append(through[0])
                ready.append(through[1])
            b, h, r = (statistics.median(x) for x in (bare, listed, ready))
            print(f"{name:<18} {b:7.2f}s {h:7.2f}s {h / b:6.2f} {r:7.2f}s", flush=True)

        latencies = detection_latency(observer, args.latency_samples)
        q = statistics.quantiles(latencies, n=20)
        print(
            "\n(b) detection latency, etcd put -> observer wait returns "
            f"({len(latencies)} samples): median {statistics.median(latencies) * 1000:.1f} ms, "
            f"p95 {q[18] * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
        )

    if args.suites:
        print("\n(c) suite wall time")
        print(f"{'suite':<10} {'serial':>9} {'-n 2':>9}  outcome (serial | -n 2)")
        for name in args.suites.split(","):
            serial, serial_tail = suite_wall_time(name, parallel=False)
            par, par_tail = suite_wall_time(name, parallel=True)
            print(f"{name:<10} {serial:8.0f}s {par:8.0f}s  {serial_tail} | {par_tail}", flush=True)


if __name__ == "__main__":
    main()
