"""What a failure says, violation first: the worker's role, pid and start path (the branch of
dynamo.sglang's start-up it took: where to read Dynamo's code), what the harness expected and
what it saw, the keys; then, as evidence, the log lines that matter and the full log's path."""

from __future__ import annotations

import re

from discovery_harness.deployment.worker import Worker
from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.judge import checks
from discovery_harness.judge.answer_evidence import PROBE_ANSWER
from discovery_harness.judge.checks import WorkerRecords
from discovery_harness.model.violations import MISFIT, NEVER_REGISTERED, WORKER_EXITED, Violation
from discovery_harness.processes.managed import without_colours
from discovery_harness.runtime import dynamo_src

# Log lines worth reading first: errors and tracebacks, anything about registration or
# discovery, and the lines an injected fault prints.
MATTERS = re.compile(
    r"\b(ERROR|CRITICAL|FATAL)\b|Traceback|Error\b|Exception\b|regist|model card|"
    r"HARNESS-FAULT|exit",
    re.IGNORECASE,
)
EXCERPT_LINES = 15
LAST_LINES = 3


def keys_summary(state: DiscoveryState, namespace: str) -> str:
    keys = [k for k in state.keys(namespace) if "/instances/" in k or "/mdc/" in k]
    listing = "\n".join(f"    {k}" for k in keys) or "    (none)"
    return f"etcd keys in namespace {namespace}:\n{listing}"


who = checks.named


def log_evidence(worker: Worker, lines: int = EXCERPT_LINES) -> str:
    """The worker's log lines that matter (errors, registration, faults), else its last
    lines, under the full log's path."""
    path = worker.proc.log_path
    try:
        text = without_colours(path.read_text(errors="replace"))
    except FileNotFoundError:
        return f"worker '{worker.role}' (pid {worker.pid}): no log at {path}"
    everything = text.splitlines()
    # The lines that matter, then the last few (what it was doing when the harness looked).
    # The harness's own /health reads are no part of it; an injected fault's lines always are.
    own = [i for i, line in enumerate(everything) if PROBE_ANSWER not in line]
    last = own[-LAST_LINES:]
    matching = [i for i in own if MATTERS.search(everything[i])]
    faults = [i for i in matching if "HARNESS-FAULT" in everything[i]][:LAST_LINES]
    chosen = sorted({*faults, *matching[-(lines - LAST_LINES - len(faults)) :], *last})
    what = "lines about errors, registration and faults, and the last lines"
    shown = "\n".join(f"    | {everything[i]}" for i in chosen) or "    (log empty)"
    return (
        f"worker '{worker.role}' (pid {worker.pid}) log: {path} ({len(everything)} lines; "
        f"{what}, {len(chosen)} of them):\n{shown}"
    )


def misfit(worker: Worker) -> Violation | None:
    """--dynamo-src: the worker's log shows the checkout and the runtime do not fit (a
    keyword the runtime rejects at registration): that, not the contract, is the verdict."""
    try:
        text = without_colours(worker.proc.log_path.read_text(errors="replace"))
    except FileNotFoundError:
        return None
    line = dynamo_src.misfit_in_log(text)
    if line is None:
        return None
    return Violation(
        MISFIT, worker.role, dynamo_src.runtime_misfit(worker.role, line), log_evidence(worker)
    )


def never_registered(
    worker: Worker, records: WorkerRecords, state: DiscoveryState, namespace: str, waited: str
) -> Violation:
    unfit = misfit(worker)
    if unfit is not None:
        return unfit
    cards = [c.key for c in state.cards(namespace)]
    instance_keys = [i.key for i in records.instances]
    what = (
        "serving but without a model card"
        if records.generate
        else f"no instance of {namespace}/{worker.component}/generate"
    )
    expected = worker.expected.describe() if worker.expected else "no card"
    return Violation(
        NEVER_REGISTERED,
        worker.role,
        f"{who(worker)} never registered ({what})\n"
        f"  expected: a model card at v1/mdc/{namespace}/{worker.component}/generate/… "
        f"({expected})\n"
        f"  seen:     instance keys {instance_keys}, model cards {cards}\n"
        f"  waited:   {waited}",
        log_evidence(worker),
    )


def exited(worker: Worker, state: DiscoveryState, namespace: str, waiting_for: str) -> Violation:
    unfit = misfit(worker)
    if unfit is not None:
        return unfit
    return Violation(
        WORKER_EXITED,
        worker.role,
        f"{who(worker)} exited with code {worker.proc.returncode} while waiting for "
        f"{waiting_for}; {keys_summary(state, namespace)}",
        log_evidence(worker),
    )


def held_back(role: str, blocker: str) -> Violation:
    return Violation(
        NEVER_REGISTERED,
        role,
        f"worker '{role}' was never started: the layout's start order waits for "
        f"'{blocker}' to serve first, and it did not (see its violation)",
    )
