"""`python -m discovery_harness audit --etcd URL | --file-store DIR [--frontend URL] [--namespace
NS]
[--grace S] [--probe] [--release V] [--topology NAME] [--report-dir DIR]`: exit 0
conformant, 1 violations, 4 (every command's usage error) for bad input or a store or frontend
that does not answer (one line)."""

from __future__ import annotations

import argparse
import dataclasses
import socket
import sys
import threading
import time
from pathlib import Path

from discovery_harness.audit import answer_logs, worker_health
from discovery_harness.audit.frontend import read_frontend
from discovery_harness.audit.observe import Observed, Unreachable, observe, open_source
from discovery_harness.common.deadline import Deadline
from discovery_harness.common.exits import USAGE_ERROR
from discovery_harness.judge.discovered import AuditedDeployment, FrontendView, judge_discovery
from discovery_harness.judge.frontend_readiness import AGREEMENT_DEADLINE_S
from discovery_harness.model import catalogue as catalogue_module
from discovery_harness.model.topology import Topology, UnsupportedRelease
from discovery_harness.model.violations import FRONTEND_HEALTH_STALE, FRONTEND_READINESS_DISAGREES
from discovery_harness.report import default_report_dir, write_reports
from discovery_harness.report.model import FAILED, NO_TESTS, PASSED, RunEntry
from discovery_harness.report.observed import card_fields, from_audit
from discovery_harness.runtime import dynamo_env

CONFORMANT, VIOLATIONS, UNUSABLE = 0, 1, USAGE_ERROR


def add_parser(commands: argparse._SubParsersAction) -> None:
    audit = commands.add_parser(
        "audit",
        help="judge a running Dynamo deployment from etcd (or the file store) and its "
        "frontend; read-only",
    )
    store = audit.add_mutually_exclusive_group(required=True)
    store.add_argument("--etcd", metavar="URL", help="e.g. http://127.0.0.1:2379")
    store.add_argument("--file-store", metavar="DIR", help="DYN_FILE_KV of the file backend")
    audit.add_argument("--frontend", metavar="URL", help="check listing and /ready (optional)")
    audit.add_argument("--namespace", metavar="NS", help="default: every namespace")
    audit.add_argument(
        "--grace", type=float, default=5.0, help="seconds a serving instance may lack its card"
    )
    audit.add_argument(
        "--probe",
        action="store_true",
        help="send one request of each declared kind (off: an audit sends no traffic unless asked)",
    )
    audit.add_argument(
        "--release", default=None, help="contracts of this ai-dynamo release (default: installed)"
    )
    audit.add_argument(
        "--topology",
        default=None,
        metavar="NAME",
        help="judge against this catalogue topology's contract instead of recognising each "
        "deployment's topology from its cards (when you know what was deployed)",
    )
    audit.add_argument(
        "--worker-health",
        action="append",
        default=[],
        metavar="URL",
        help="a worker's system server (http://HOST:DYN_SYSTEM_PORT; repeat per worker; `up` "
        "prints each): its /health must say ready within the grace",
    )
    audit.add_argument(
        "--frontend-log",
        metavar="PATH",
        help="the frontend's log: a failed probe shows its lines for the request (with --probe)",
    )
    audit.add_argument(
        "--worker-log",
        action="append",
        default=[],
        metavar="ID=PATH",
        help="a worker's log, ID its instance id as printed or its role (repeat per worker): "
        "a failed probe shows the serving worker's errors",
    )
    audit.add_argument("--report-dir", default=None, help="default: reports/")


def contracts(release: str) -> list[Topology]:
    found = []
    for topology in catalogue_module.load().topologies:
        try:
            found.append(topology.for_release(release))
        except UnsupportedRelease:
            continue
    return found


def audit_command(args: argparse.Namespace) -> int:
    started = time.time()
    if args.grace < 0:
        print(f"audit: --grace {args.grace:g}: seconds, 0 or more", file=sys.stderr)
        return UNUSABLE
    release = args.release or dynamo_env.active().version
    topologies = contracts(release)
    if args.topology:
        chosen = [t for t in topologies if t.name == args.topology]
        if not chosen:
            known = ", ".join(t.name for t in topologies)
            print(
                f"audit: no topology {args.topology!r} for ai-dynamo {release}; {known}",
                file=sys.stderr,
            )
            return UNUSABLE
        topologies = chosen
    try:
        worker_logs = answer_logs.parse_worker_logs(args.worker_log)
        frontend_log = answer_logs.existing_log(args.frontend_log) if args.frontend_log else None
    except answer_logs.BadLogOption as bad:
        print(f"audit: {bad}", file=sys.stderr)
        return UNUSABLE
    view = FrontendView()
    try:
        source = open_source(args.etcd, args.file_store)
        seen = observe(source, args.grace)
        audited = _judge(seen, args, topologies, FrontendView())
        if args.frontend:
            view = read_frontend(args.frontend, audited, args.probe)
            audited = _judge(seen, args, topologies, view)
            seen, audited = _until_frontend_agrees(seen, audited, args, topologies, view)
    except Unreachable as unreachable:
        print(f"audit: {unreachable}", file=sys.stderr)
        return UNUSABLE
    print(
        f"audit: {seen.where}, frontend {args.frontend or '(none)'}, grace {args.grace:.0f} s, "
        f"contracts of ai-dynamo {release}"
    )
    for deployment in audited:
        print(describe(deployment))
    cause = answer_logs.evidence(view.exchanges, audited, frontend_log, worker_logs)
    if cause:
        print(f"\n--- evidence ---\n{cause}")
    readings = [worker_health.read(url, args.grace) for url in args.worker_health]
    unready = [v for r in readings if (v := r.violation()) is not None]
    for reading in readings:
        print(f"audit: {reading.line()}")
    for violation in unready:
        print(f"  {violation}")
    failed = [d for d in audited if not d.verdict.conformant]
    nothing = not audited
    if nothing:
        scope = f"namespace {args.namespace}" if args.namespace else "discovery"
        print(f"audit: nothing serves or is registered in {scope}")
    else:
        print(f"audit: {len(failed)} of {len(audited)} deployment(s) not conformant")
    out = Path(args.report_dir) if args.report_dir else default_report_dir()
    run = RunEntry(
        command="python -m discovery_harness audit " + " ".join(sys.argv[2:]),
        started_at=started,
        finished_at=time.time(),
        release=release,
        tier="-",
        infra=seen.where,
        spawn="-",
        host=socket.gethostname(),
        outcome=FAILED if failed else (NO_TESTS if nothing else PASSED),
        deployments=[from_audit(d) for d in audited],
    )
    write_reports(run, out)
    print(f"audit: reports in {out}")
    if failed or unready or (nothing and args.namespace):
        return VIOLATIONS
    return CONFORMANT


def _judge(
    seen: Observed, args: argparse.Namespace, topologies: list[Topology], view: FrontendView
) -> list[AuditedDeployment]:
    return judge_discovery(
        seen.state, seen.first_seen, seen.at, args.grace, topologies, view, args.namespace
    )


def _until_frontend_agrees(
    seen: Observed,
    audited: list[AuditedDeployment],
    args: argparse.Namespace,
    topologies: list[Topology],
    view: FrontendView,
) -> tuple[Observed, list[AuditedDeployment]]:
    """The frontend follows discovery a moment later than the audit read it: a disagreement
    is re-read (discovery, then the frontend's /ready and /health; no new probes) until it
    goes or AGREEMENT_DEADLINE_S passes, and only then reported."""
    deadline = Deadline(AGREEMENT_DEADLINE_S)
    while _frontend_disagrees(audited) and not deadline.expired:
        threading.Event().wait(deadline.slice(0.2))
        seen = observe(open_source(args.etcd, args.file_store), args.grace)
        again = read_frontend(args.frontend, audited, probe=False)
        view = dataclasses.replace(view, ready=again.ready, health=again.health)
        audited = _judge(seen, args, topologies, view)
    return seen, audited


def _frontend_disagrees(audited: list[AuditedDeployment]) -> bool:
    kinds = {FRONTEND_READINESS_DISAGREES, FRONTEND_HEALTH_STALE}
    return any(v.kind in kinds for d in audited for v in d.verdict.violations)


def describe(deployment: AuditedDeployment) -> str:
    verdict = deployment.verdict
    head = (
        f"\n{deployment.namespace} / model '{deployment.model or '-'}': recognised as "
        f"{deployment.topology}: "
        + ("conformant" if verdict.conformant else f"{len(verdict.violations)} violation(s)")
    )
    lines = [head]
    for worker in deployment.workers:
        card = card_fields(worker.card) if worker.card else None
        shown = ", ".join(f"{k} {v}" for k, v in card.items()) if card else "NO CARD"
        lines.append(
            f"  {worker.role:<16} {worker.component}/generate {worker.instance.instance_id:x} "
            f"at {worker.address}: {shown}"
        )
    lines += [f"  {line}" for line in deployment.frontend_checks]
    lines += [f"\n{violation}" for violation in verdict.violations]
    return "\n".join(lines)
