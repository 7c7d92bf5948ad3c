"""The health canary of a deployment's workers, read from their logs (judged by
discovery_harness.judge.canary).

Every verdict judges the canaries that ran before the harness began stopping each worker
(one its handler rejected is a violation wherever it shows). A scenario that must prove the
canary ran waits for it: the runtime sends one only after DYN_CANARY_WAIT_TIME of idleness
(whole seconds in 1.6.1), so `await_canaries` waits on the workers' logs, with a deadline,
until each worker whose mode builds a payload has had one come back from its handler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment.diagnosis import log_evidence
from discovery_harness.deployment.worker import Worker
from discovery_harness.judge import canary
from discovery_harness.judge.canary import CanaryLog, CanaryPayload
from discovery_harness.model.violations import READY_BEFORE_CARD, Violation
from discovery_harness.processes.managed import without_colours
from discovery_harness.runtime import dynamo_env
from discovery_harness.runtime.launch import CANARY_WAIT_S

# 1.6.1's DYN_HEALTH_CHECK_REQUEST_TIMEOUT default (3 s) after the idle wait, and a margin
# for a loaded machine.
CANARY_DEADLINE_S = CANARY_WAIT_S + 3.0 + 2.0
_POLL_S = 0.05


def payload_of(worker: Worker) -> CanaryPayload | None:
    """The payload its mode sends, if it serves a generate endpoint with one."""
    if worker.expected is None and not worker.internal_endpoint:
        return None  # a multi-node follower, a gateway leader alone: nothing served
    return canary.payload_for(worker.start_paths, worker.spec.flags, dynamo_env.active().version)


def observe(worker: Worker) -> CanaryLog:
    """Its canaries so far, up to the moment the harness signalled it to stop."""
    lines = without_colours(worker.proc.log_text()).splitlines()
    return canary.read_canaries(lines, until=worker.proc.signalled_wall)


def _proven(worker: Worker, log: CanaryLog) -> bool:
    # A gateway's children each run their own canary into the leader's log.
    return bool(log.failures) or log.succeeded >= max(worker.registrants, 1)


def await_canaries(
    workers: Sequence[Worker], waited: dict[str, str], deadline: Deadline | None = None
) -> dict[str, CanaryLog]:
    """Wait until every worker with a payload logged a canary that came back from its
    handler (or one was rejected), or the deadline passes; each such worker's canaries.
    Records in `waited` (the deployment's) what each was waited for, so its verdict
    requires the canary of each."""
    deadline = deadline or Deadline(CANARY_DEADLINE_S)
    watched = [w for w in workers if payload_of(w) is not None]
    waited.update({w.role: waited_for(deadline.seconds) for w in watched})
    while True:
        logs = {w.role: observe(w) for w in watched}
        pending = [w for w in watched if w.proc.alive() and not _proven(w, logs[w.role])]
        if not pending or deadline.expired:
            return logs
        pending[0].proc.popen_wait(deadline.slice(_POLL_S))


def violations(workers: Sequence[Worker], waited: Mapping[str, str]) -> list[Violation]:
    """Every worker's canary judged; those in `waited` (role: what was waited for) must
    also show one that reached the handler."""
    found: list[Violation] = []
    for worker in workers:
        payload = payload_of(worker)
        if payload is None:
            continue
        log = observe(worker)
        must_run = waited.get(worker.role)
        if log.failures or (must_run is not None and log.succeeded == 0):
            found += canary.judge(worker, payload, log, log_evidence(worker), must_run)
    return found


def beside_unready(
    workers: Sequence[Worker],
    unready: Sequence[Violation],
    waited: dict[str, str],
    deadline: Deadline | None = None,
) -> list[Violation]:
    """The canaries' part in a readiness verdict on /health, named beside it as the cause.
    A canary its handler refused keeps /health at 503. An endpoint served without its payload
    is ready at serve time, before its card (1.6.1): a worker ready before its card is given
    the time for a canary to come back, and one that never does is named (whichever of the
    two the race showed first, the same finding)."""
    early = {v.role for v in unready if v.kind == READY_BEFORE_CARD}
    await_canaries([w for w in workers if w.role in early], waited, deadline)
    return violations(workers, waited)


def waited_for(seconds: float) -> str:
    return (
        f"{seconds:.1f} s for a health check to come back from the handler "
        f"(DYN_CANARY_WAIT_TIME={CANARY_WAIT_S} s of idleness, then up to the 3 s request timeout)"
    )
