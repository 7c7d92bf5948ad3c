"""Benchmark: worker starts fresh vs from the template, detection latency, suite wall times.

    .venv/bin/python -m bench.registration [--topologies all|a,b] [--repeat 5] [--no-fresh]
                                           [--latency-samples 50] [--suites matrix,selftest,default]
                                           [--suite-runs 1]

(a) per topology, each worker's start to its model card in etcd (watch events; the slowest
    worker of the topology), the deployment's start to ready (a request served), and CPU
    seconds and PSS per worker at ready, with workers started fresh and forked from the
    pre-imported template: medians of --repeat runs, side by side with their ratio
    (--no-fresh: the template's only);
(a') per topology, the phases of a deployment forked from the template (bench/phases.py: the
    harness's registration marks, a LoRA load and unload, the stop), medians of --repeat;
(b) detection latency: a card key written to etcd until the observer's wait returns;
(c) wall and CPU time of whole pytest runs: the topology matrix (the default run's
    topologies) fresh and from the template, every self-test, and the README's test command
    (two xdist workers) beside the same tests in one process; each --suite-runs times (the
    median, and every run), with the run's slowest tests.
Nothing here asserts: it prints the figures and writes them, dated, with the machine and the
command, to bench/RESULTS.md (bench/results.py); the README links there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench import phases as phase_marks
from bench.phases import Phases
from bench.readme_command import readme_test_args
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
from discovery_harness.runtime.spawn import FRESH, ZYGOTE, TemplateInfo
from discovery_harness_scenarios.catalogue import CATALOGUE, by_name

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class StartFigures:
    to_card_s: float  # slowest worker: process start -> its card in etcd
    to_ready_s: float  # deployment start -> a request served
    cpu_s: float  # mean CPU seconds (user + system) per worker at ready
    pss_mb: float  # mean proportional set size per worker at ready
    # mean unique set size: what the worker alone holds (PSS adds a share of the pages it
    # shares with the template and its siblings, so it falls as more forked workers live)
    uss_mb: float


def one_start(
    session: Session, topology: Topology, spawn: str, stops: list[float]
) -> tuple[StartFigures, Phases]:
    """One deployment started, measured at ready, its phases read (a LoRA loaded and unloaded
    where the topology has one), then stopped in the background (its duration into `stops`)."""
    deployment = Deployment(topology, session, spawn=spawn)
    started, started_wall = time.monotonic(), time.time()
    try:
        deployment.start().await_ready()
        ready = time.monotonic() - started
        cards = [row.offsets()["card"] for row in deployment.timeline()]
        usage = []
        for worker in deployment.processes.workers:
            process = psutil.Process(worker.pid)
            times = process.cpu_times()
            memory = process.memory_full_info()
            usage.append((times.user + times.system, memory.pss / 2**20, memory.uss / 2**20))
        figures = StartFigures(
            to_card_s=max(c for c in cards if c is not None),
            to_ready_s=ready,
            cpu_s=statistics.mean(u[0] for u in usage),
            pss_mb=statistics.mean(u[1] for u in usage),
            uss_mb=statistics.mean(u[2] for u in usage),
        )
        phases = phase_marks.with_lora(deployment, phase_marks.marks(deployment, started_wall))
        return figures, phases
    finally:
        session.stops.submit(deployment.plan.namespace, phase_marks.timed_stop(deployment, stops))


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


README_COMMAND: list[str] = []  # a suite's arguments: each checkout's README test command
OWN_UNDER_N2 = ["-n", "2"]  # this checkout's tests as the baseline's README ran them
SUITES = {
    "matrix": [
        ("topology matrix, fresh", ["scenarios/test_topologies.py", "--spawn", "fresh"]),
        ("topology matrix, template", ["scenarios/test_topologies.py"]),
    ],
    "selftest": [("every self-test (-m selftest)", ["-m", "selftest"])],
    "default": [
        ("the README's test command", README_COMMAND),
        ("the same tests in one process (no -n)", []),
    ],
    # What `conformance` runs: the topology matrix in one process, forked from the template.
    "conformance": [
        ("conformance's matrix, one process, template", ["scenarios/test_topologies.py"])
    ],
    # The README's command alone: what a budget on it is measured by.
    "readme": [
        ("the README's test command", README_COMMAND),
        ("this checkout's tests under the baseline's -n 2", OWN_UNDER_N2),
    ],
}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def suite_wall_time(
    args: list[str], checkout: Path = ROOT
) -> tuple[float, float, str, list[tuple[float, str]]]:
    """(wall seconds, CPU seconds of the whole process tree, pytest's last line and failures,
    the slowest tests: (seconds, test id), setup and teardown included as JUnit counts them).
    The CPU figure counts every process of the run that its parent waited for: pytest, its
    xdist workers, etcd, NATS, frontends, the template and each worker forked from it.
    `checkout`: another checkout of the harness (--baseline), run with its own .venv."""
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as scratch:
        junit = Path(scratch) / "junit.xml"
        python = sys.executable if checkout == ROOT else str(checkout / ".venv/bin/python")
        command = [
            python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--junitxml={junit}", *args,
        ]  # fmt: skip
        started, cpu_before = time.monotonic(), _children_cpu_s()
        result = subprocess.run(command, cwd=checkout, capture_output=True, text=True)
        wall = time.monotonic() - started
        slowest = _slowest(junit) if junit.exists() else []
    lines = result.stdout.strip().splitlines()
    tail = lines[-1] if lines else "?"
    # A figure from a run that failed says which tests failed.
    failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    cpu = _children_cpu_s() - cpu_before
    return wall, cpu, "; ".join([tail, *failed]), slowest


def _slowest(junit: Path, count: int = 3) -> list[tuple[float, str]]:
    cases = ElementTree.parse(junit).getroot().iter("testcase")
    timed = [(float(c.get("time", 0)), str(c.get("name"))) for c in cases]
    return sorted(timed, reverse=True)[:count]


def start_session(stack: ExitStack) -> tuple[Session, TemplateInfo]:
    """The session the harness's own tools use (discovery_harness.deployment.session_setup),
    with local etcd and NATS, the tiny models and the worker template, waited for."""
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
    settings = Settings(spawn=ZYGOTE)
    models = TinyModels(workdir / "models").path_for
    session = stack.enter_context(
        standalone_session(LocalProcessProvider(), settings, workdir, models)
    )
    assert session.spawner is not None
    return session, session.spawner.wait_ready(Deadline(300))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--topologies", default="all")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--fresh",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also start every topology fresh, for (a)'s comparison, and run the matrix "
        "fresh in (c) (default: yes)",
    )
    parser.add_argument("--latency-samples", type=int, default=50)
    parser.add_argument("--suites", default="", help="comma list of: " + ", ".join(SUITES))
    parser.add_argument("--suite-runs", type=int, default=1, help="runs of each suite")
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="CHECKOUT",
        help="another checkout of the harness (e.g. a worktree of an earlier commit, with its "
        "own .venv): each suite runs there too, its runs alternating with this one's, the two "
        "figures side by side with their ratio",
    )
    parser.add_argument(
        "--results",
        default=str(RESULTS),
        help="where the dated figures are written (default bench/RESULTS.md; '' for nowhere)",
    )
    args = parser.parse_args()
    unknown = [s for s in args.suites.split(",") if s and s not in SUITES]
    if unknown:  # before minutes of starts, not after them
        parser.error(f"--suites {', '.join(unknown)}: one of {', '.join(SUITES)}")
    install_cleanup_handlers()  # a bench stopped by SIGTERM leaves no process behind
    names = [t.name for t in CATALOGUE] if args.topologies == "all" else args.topologies.split(",")
    results = Results("Benchmark: worker starts, phases, detection latency, whole runs")
    with ExitStack() as stack:
        session, info = start_session(stack)
        results.say(
            f"worker template: imports {info.import_s:.1f} s ({info.modules} modules, "
            f"{info.os_threads} thread(s)), once a session, before the first fork"
        )
        results.say()
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
                "USS MB/worker",
            )
        )
        phase_rows: list[tuple[str, list[Phases], list[float]]] = []
        for name in names:
            topology = by_name(name)
            fresh = (
                median_figures(
                    [one_start(session, topology, FRESH, [])[0] for _ in range(args.repeat)]
                )
                if args.fresh
                else None
            )
            stops: list[float] = []
            runs = [one_start(session, topology, ZYGOTE, stops) for _ in range(args.repeat)]
            forked = median_figures([figures for figures, _ in runs])
            phase_rows.append((name, [phases for _, phases in runs], stops))
            results.row(
                name,
                f"{fresh.to_card_s:.2f} s" if fresh else "-",
                f"{forked.to_card_s:.2f} s",
                f"{fresh.to_card_s / forked.to_card_s:.0f}x" if fresh else "-",
                f"{fresh.to_ready_s:.2f} s" if fresh else "-",
                f"{forked.to_ready_s:.2f} s",
                f"{fresh.cpu_s:.1f} / {forked.cpu_s:.2f}" if fresh else f"{forked.cpu_s:.2f}",
                f"{fresh.pss_mb:.0f} / {forked.pss_mb:.0f}" if fresh else f"{forked.pss_mb:.0f}",
                f"{fresh.uss_mb:.0f} / {forked.uss_mb:.0f}" if fresh else f"{forked.uss_mb:.0f}",
            )
        session.stops.drain(hurry=False)  # every stop timed to its graceful end

        results.say()
        results.say(
            f"## (a') phases of a deployment forked from the template (median of {args.repeat}; "
            "forked .. first answer: seconds since the deployment was asked to start, the "
            "slowest worker's mark; LoRA load/unload: until every worker's LoRA card came/went; "
            "stop: SIGTERM until every process is gone, in the background while the next "
            "deployment starts)"
        )
        results.say()
        phase_marks.write_table(
            results,
            [
                (name, dataclasses.replace(phase_marks.median(runs), stop=_median(stops)))
                for name, runs, stops in phase_rows
            ],
        )

        latencies = detection_latency(session.observer, args.latency_samples)
        q = statistics.quantiles(latencies, n=20, method="inclusive")
        results.say()
        results.say(
            "## (b) detection latency, etcd put -> observer wait returns "
            f"({len(latencies)} samples): median {statistics.median(latencies) * 1000:.1f} ms, "
            f"p95 {q[18] * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
        )
        session_end = time.monotonic()
    results.say()
    results.say(
        f"session end (the template, frontend, etcd, NATS stopped): "
        f"{time.monotonic() - session_end:.2f} s"
    )

    if args.suites:
        results.say()
        results.say(
            f"## (c) whole runs: wall time (median of {args.suite_runs}, and each run), "
            "CPU time of all their processes, the slowest tests (JUnit: setup, call, teardown)"
        )
        results.say()
        results.table(("run", "wall", "CPU (all processes)", "slowest tests", "result"))
        for suite in args.suites.split(","):
            for label, pytest_args in SUITES[suite]:
                if not args.fresh and "fresh" in pytest_args:
                    continue  # --no-fresh: the template's runs only
                baseline = Path(args.baseline).resolve() if args.baseline else None
                if pytest_args is OWN_UNDER_N2:
                    baseline = None  # its baseline row is the README command's (-n 2 there)
                done, before = [], []
                for _ in range(args.suite_runs):  # alternating: both see the same machine
                    if baseline is not None:
                        before.append(suite_wall_time(_args(pytest_args, baseline), baseline))
                    done.append(suite_wall_time(_args(pytest_args, ROOT)))
                own = f"`pytest {' '.join(_args(pytest_args, ROOT))}`"
                if baseline is not None:
                    base = f"`pytest {' '.join(_args(pytest_args, baseline))}`"
                    results.row(*_suite_row(f"{label} (baseline {baseline.name}: {base})", before))
                    ratio = statistics.median(r[0] for r in done) / max(
                        statistics.median(r[0] for r in before), 1e-9
                    )
                    own = f"{own}, {ratio:.2f}x the baseline"
                label = f"{label} (this checkout: {own})"
                results.row(*_suite_row(label, done))
    if args.results:
        written = results.write(Path(args.results), dynamo_env.active().version)
        print(f"\n(written to {written})")


SuiteRun = tuple[float, float, str, list[tuple[float, str]]]


def _args(pytest_args: list[str], checkout: Path) -> list[str]:
    """A suite's pytest arguments in `checkout`: README_COMMAND is that checkout's own."""
    return readme_test_args(checkout) if pytest_args is README_COMMAND else pytest_args


def _suite_row(label: str, done: list[SuiteRun]) -> tuple[str, ...]:
    """A whole-run row: the median wall time (and each run's), the median run's CPU, slowest
    tests and pytest's last line."""
    walls = [run[0] for run in done]
    wall = f"{statistics.median(walls):.1f} s" + (
        f" ({', '.join(f'{w:.1f}' for w in walls)})" if len(walls) > 1 else ""
    )
    _, cpu, tail, slowest = sorted(done, key=lambda run: run[0])[len(done) // 2]
    slow = ", ".join(f"{test} {seconds:.1f} s" for seconds, test in slowest)
    return label, wall, f"{cpu:.0f} s", slow, tail


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


if __name__ == "__main__":
    main()
