"""Benchmark: worker starts fresh vs from the template, detection latency, suite wall times.

    .venv/bin/python -m bench.registration [--topologies all|a,b] [--repeat 5]
                                           [--latency-samples 50] [--suites matrix,selftest,default]

(a) per topology, each worker's start to its model card in etcd (watch events; the slowest
    worker of the topology), the deployment's start to ready (a request served), and CPU
    seconds and PSS per worker at ready, with workers started fresh and forked from the
    pre-imported template: medians of --repeat runs, side by side with their ratio;
(b) detection latency: a card key written to etcd until the observer's wait returns;
(c) wall and CPU time of whole pytest runs: the topology matrix (the default run's
    topologies) fresh and from the template, every self-test, and the README's test command
    (two xdist workers) beside the same tests in one process.
Nothing here asserts: it prints the figures and writes them, dated, with the machine and the
command, to bench/RESULTS.md (bench/results.py); the README links there.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.results import RESULTS, Results
from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment import Deployment, Session, Settings
from discovery_harness.deployment.session_setup import standalone_session
from discovery_harness.discovery.observer import DiscoveryObserver
from discovery_harness.model.topology import Topology
from discovery_harness.processes.infra.local_process import LocalProcessProvider
from discovery_harness.processes.managed import install_cleanup_handlers
from discovery_harness.runtime import dynamo_env
from discovery_harness.runtime.model_source import TinyModels
from discovery_harness.runtime.spawn import FRESH, ZYGOTE
from discovery_harness_scenarios.catalogue import CATALOGUE, by_name

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class StartFigures:
    to_card_s: float  # slowest worker: process start -> its card in etcd
    to_ready_s: float  # deployment start -> a request served
    cpu_s: float  # mean CPU seconds (user + system) per worker at ready
    pss_mb: float  # mean proportional set size per worker at ready


def one_start(session: Session, topology: Topology, spawn: str) -> StartFigures:
    deployment = Deployment(topology, session, spawn=spawn)
    started = time.monotonic()
    try:
        deployment.start().await_ready()
        ready = time.monotonic() - started
        cards = [row.offsets()["card"] for row in deployment.timeline()]
        usage = []
        for worker in deployment.workers:
            process = psutil.Process(worker.pid)
            times = process.cpu_times()
            usage.append((times.user + times.system, process.memory_full_info().pss / 2**20))
        return StartFigures(
            to_card_s=max(c for c in cards if c is not None),
            to_ready_s=ready,
            cpu_s=statistics.mean(u[0] for u in usage),
            pss_mb=statistics.mean(u[1] for u in usage),
        )
    finally:
        session.stops.submit(deployment.namespace, deployment.stop)


def median_figures(runs: list[StartFigures]) -> StartFigures:
    return StartFigures(
        *(statistics.median(getattr(r, f) for r in runs) for f in StartFigures.__dataclass_fields__)
    )


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
    "matrix": [
        ("topology matrix, fresh", ["scenarios/test_topologies.py", "--spawn", "fresh"]),
        ("topology matrix, template", ["scenarios/test_topologies.py"]),
    ],
    "selftest": [("every self-test (-m selftest)", ["-m", "selftest"])],
    "default": [
        ("README test command (python -m pytest -n 2)", ["-n", "2"]),
        ("the same tests in one process (no -n)", []),
    ],
}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def suite_wall_time(args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the whole process tree, pytest's last line and failures).
    The CPU figure counts every process of the run that its parent waited for: pytest, its
    xdist workers, etcd, NATS, frontends, the template and each worker forked from it."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    started, cpu_before = time.monotonic(), _children_cpu_s()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()
    tail = lines[-1] if lines else "?"
    # A figure from a run that failed says which tests failed.
    failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    cpu = _children_cpu_s() - cpu_before
    return time.monotonic() - started, cpu, "; ".join([tail, *failed])


def start_session(stack: ExitStack) -> Session:
    """The session the harness's own tools use (discovery_harness.deployment.session_setup), with
    local
    etcd and NATS, the tiny models and the worker template, waited for and described."""
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
    settings = Settings(spawn=ZYGOTE)
    models = TinyModels(workdir / "models").path_for
    session = stack.enter_context(
        standalone_session(LocalProcessProvider(), settings, workdir, models)
    )
    assert session.spawner is not None
    info = session.spawner.wait_ready(Deadline(300))
    print(
        f"worker template: imports {info.import_s:.1f} s, {info.modules} modules, "
        f"{info.os_threads} thread(s)",
        flush=True,
    )
    return session


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--topologies", default="all")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--latency-samples", type=int, default=50)
    parser.add_argument("--suites", default="", help="comma list of: " + ", ".join(SUITES))
    parser.add_argument(
        "--results",
        default=str(RESULTS),
        help="where the dated figures are written (default bench/RESULTS.md; '' for nowhere)",
    )
    args = parser.parse_args()
    install_cleanup_handlers()  # a bench stopped by SIGTERM leaves no process behind
    names = [t.name for t in CATALOGUE] if args.topologies == "all" else args.topologies.split(",")
    results = Results("Benchmark: worker starts, detection latency, whole runs")
    with ExitStack() as stack:
        session = start_session(stack)
        results.say(
            f"## (a) worker start, fresh vs forked from the template (median of {args.repeat})"
        )
        results.say()
        results.table(
            (
                "topology",
                "card fresh",
                "card tmpl",
                "ratio",
                "ready fresh",
                "ready tmpl",
                "CPU s/worker",
                "PSS MB/worker",
            )
        )
        for name in names:
            topology = by_name(name)
            fresh = median_figures(
                [one_start(session, topology, FRESH) for _ in range(args.repeat)]
            )
            forked = median_figures(
                [one_start(session, topology, ZYGOTE) for _ in range(args.repeat)]
            )
            results.row(
                name,
                f"{fresh.to_card_s:.2f} s",
                f"{forked.to_card_s:.2f} s",
                f"{fresh.to_card_s / forked.to_card_s:.0f}x",
                f"{fresh.to_ready_s:.2f} s",
                f"{forked.to_ready_s:.2f} s",
                f"{fresh.cpu_s:.1f} / {forked.cpu_s:.2f}",
                f"{fresh.pss_mb:.0f} / {forked.pss_mb:.0f}",
            )

        latencies = detection_latency(session.observer, args.latency_samples)
        q = statistics.quantiles(latencies, n=20, method="inclusive")
        results.say()
        results.say(
            "## (b) detection latency, etcd put -> observer wait returns "
            f"({len(latencies)} samples): median {statistics.median(latencies) * 1000:.1f} ms, "
            f"p95 {q[18] * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
        )

    if args.suites:
        results.say()
        results.say("## (c) whole runs: wall time, CPU time of all their processes")
        results.say()
        results.table(("run", "wall", "CPU (all processes)", "result"))
        for suite in args.suites.split(","):
            for label, pytest_args in SUITES[suite]:
                seconds, cpu, tail = suite_wall_time(pytest_args)
                results.row(label, f"{seconds:.0f} s", f"{cpu:.0f} s", tail)
    if args.results:
        written = results.write(Path(args.results), dynamo_env.active().version)
        print(f"\n(written to {written})")


if __name__ == "__main__":
    main()
