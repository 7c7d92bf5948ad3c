"""Measure a restart window: a worker stopped (SIGTERM), restarted, and the requests that
follow its model's listing, N times on one session, with the frontend's words for each refusal.

    .venv/bin/python -m bench.restart_window [--topology disaggregated] [--role prefill]
                                             [--runs 20] [--requests 5]

Per run: how long until registered and listed again, each request's status and when it was
answered after the listing, and for a run with a refusal the frontend's log lines around it.
The summary gives the rate (runs with a refusal / runs, refused requests / requests) and the
latest refusal after the listing: the figures a known-violation window in the catalogue cites.
Nothing here asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment import Deployment, Settings
from discovery_harness.deployment.disruption import come_back, depart
from discovery_harness.deployment.session_setup import standalone_session
from discovery_harness.model.events import relisted_after_restart
from discovery_harness.processes.infra.local_process import LocalProcessProvider
from discovery_harness.processes.managed import install_cleanup_handlers, without_colours
from discovery_harness.runtime.model_source import TinyModels
from discovery_harness.runtime.spawn import ZYGOTE
from discovery_harness_scenarios.catalogue import by_name


@dataclass(frozen=True)
class RunFigures:
    unlisted_s: float | None  # stop -> the model unlisted (None: still listed at the restart)
    listed_s: float | None  # restart -> listed again
    statuses: tuple[int, ...]  # the requests after the listing
    refused_after_s: tuple[float, ...]  # each refusal's answer, seconds after the listing
    log: str  # the frontend's lines around the first refusal ("" without one)


def one_run(deployment: Deployment, role: str, requests: int, gone_s: float) -> RunFigures:
    gone = depart(deployment, role, signal.SIGTERM, within_s=gone_s)
    back = come_back(deployment, role, within_s=30, requests=requests)
    listed_at = deployment.events.last(relisted_after_restart(role))
    refused = [r for r in back.replies if r.status != 200]
    exchanges = [e for e in deployment.client.exchanges if e.after_ready and e.status == 503]
    after = tuple(
        round(e.wall_time - listed_at, 3)
        for e in exchanges
        if listed_at and e.wall_time >= listed_at
    )
    return RunFigures(
        unlisted_s=gone.unlisted_s,
        listed_s=back.listed_s,
        statuses=tuple(r.status for r in back.replies),
        refused_after_s=after,
        log=_around_refusal(deployment.frontend_log.text()) if refused else "",
    )


def _around_refusal(log: str, before: int = 6, after: int = 4) -> str:
    lines = without_colours(log).splitlines()
    hit = next(
        (i for i, line in enumerate(lines) if " 503 " in line or "503" in line.split()[-1:]), None
    )
    if hit is None:
        hit = next((i for i, line in enumerate(lines) if "WARN" in line or "ERROR" in line), None)
    if hit is None:
        return "\n".join(lines[-before:])
    return "\n".join(lines[max(0, hit - before) : hit + after])


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    """`count` processes spinning on a core each until the block ends (stopped by pid)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--topology", default="disaggregated")
    parser.add_argument("--role", default="prefill")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument(
        "--stopped-for",
        type=float,
        default=15.0,
        metavar="S",
        help="wait at most S s for the stopped worker's keys and listing to go before the "
        "restart (the edge test's 15 s; less restarts it while the model is still listed)",
    )
    parser.add_argument(
        "--load",
        type=int,
        default=0,
        metavar="N",
        help="N busy processes beside the runs (a CI machine running other tests at once)",
    )
    args = parser.parse_args()
    install_cleanup_handlers()
    topology = by_name(args.topology)
    figures: list[RunFigures] = []
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
        session = stack.enter_context(
            standalone_session(
                LocalProcessProvider(),
                Settings(spawn=ZYGOTE),
                workdir,
                TinyModels(workdir / "models").path_for,
            )
        )
        assert session.spawner is not None
        session.spawner.wait_ready(Deadline(300))
        stack.enter_context(busy(args.load))
        for run in range(1, args.runs + 1):
            with Deployment(topology, session) as deployment:
                deployment.start().await_ready()
                result = one_run(deployment, args.role, args.requests, args.stopped_for)
            figures.append(result)
            print(
                f"run {run:>3}: unlisted after "
                + (f"{result.unlisted_s:.1f} s" if result.unlisted_s else "- (still listed)")
                + f"; listed again after {result.listed_s or float('nan'):.2f} s; "
                f"statuses {list(result.statuses)}"
                + (f"; 503 at +{list(result.refused_after_s)} s" if result.refused_after_s else ""),
                flush=True,
            )
            if result.log:
                print(
                    "  frontend:\n" + "\n".join(f"    {line}" for line in result.log.splitlines())
                )
    refused_runs = sum(1 for f in figures if any(s != 200 for s in f.statuses))
    refused = sum(1 for f in figures for s in f.statuses if s != 200)
    total = sum(len(f.statuses) for f in figures)
    latest = max((t for f in figures for t in f.refused_after_s), default=None)
    listed = [f.listed_s for f in figures if f.listed_s is not None]
    print(
        f"\n{args.topology}/{args.role} restarted {len(figures)} times beside {args.load} busy "
        f"process(es): {refused_runs} run(s) "
        f"with a refusal ({refused_runs / len(figures):.0%}), {refused} of {total} requests "
        f"({refused / total:.0%}); latest refusal {latest if latest is not None else '-'} s "
        f"after the listing; listed again after a median {statistics.median(listed):.2f} s"
        if listed
        else "no run listed the model again"
    )


if __name__ == "__main__":
    main()
