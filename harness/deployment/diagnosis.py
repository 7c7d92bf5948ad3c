"""What a failure says: the worker's role and pid, what the harness waited for, the keys it
saw, and the tail of the worker's log."""

from __future__ import annotations

from harness.checks import WorkerRecords
from harness.deployment.worker import Worker
from harness.observer import DiscoveryState
from harness.violations import NEVER_REGISTERED, WORKER_EXITED, Violation


def keys_summary(state: DiscoveryState, namespace: str) -> str:
    keys = [k for k in state.keys(namespace) if "/instances/" in k or "/mdc/" in k]
    listing = "\n".join(f"    {k}" for k in keys) or "    (none)"
    return f"etcd keys in namespace {namespace}:\n{listing}"


def never_registered(
    worker: Worker, records: WorkerRecords, state: DiscoveryState, namespace: str, waited: str
) -> Violation:
    cards = [c.key for c in state.cards(namespace)]
    instance_keys = [i.key for i in records.instances]
    what = (
        "serving but without a model card"
        if records.generate
        else f"no instance of {namespace}/{worker.component}/generate"
    )
    return Violation(
        NEVER_REGISTERED,
        worker.role,
        f"worker '{worker.role}' (pid {worker.pid}) never registered ({what}): "
        f"waiting for its model card at v1/mdc/{namespace}/{worker.component}/generate/…; "
        f"instance keys {instance_keys}, model cards {cards}, waited {waited}; "
        f"last log lines:\n{worker.proc.log_tail()}",
    )


def exited(worker: Worker, state: DiscoveryState, namespace: str, waiting_for: str) -> Violation:
    return Violation(
        WORKER_EXITED,
        worker.role,
        f"worker '{worker.role}' (pid {worker.pid}) exited with code "
        f"{worker.proc.returncode} while waiting for {waiting_for}; "
        f"{keys_summary(state, namespace)}\nlast log lines:\n{worker.proc.log_tail()}",
    )


def held_back(role: str, blocker: str) -> Violation:
    return Violation(
        NEVER_REGISTERED,
        role,
        f"worker '{role}' was never started: the layout's start order waits for "
        f"'{blocker}' to serve first, and it did not (see its violation)",
    )
