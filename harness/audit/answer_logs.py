"""The cause beside an audit's failed probe, from logs the audit was given: it did not start
the deployment, so it reads the frontend's log (`--frontend-log PATH`) and the workers' logs
(`--worker-log ID=PATH`, ID the instance id the audit prints, or the role it recognised) for
each probe's request id, as the suite does for its own deployments
(judge/answer_evidence.py). Workers are named by role and instance id: an audit knows no pid.
Without logs it says so, and gives the request ids to look for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from discovery_harness.judge.answer_evidence import ServingWorker, render_all
from discovery_harness.judge.discovered import AuditedDeployment
from discovery_harness.processes.managed import without_colours
from discovery_harness.serving.http_client import Exchange


class BadLogOption(ValueError):
    """A --worker-log that is not ID=PATH, or a log that is not a file."""


def parse_worker_logs(given: Sequence[str]) -> dict[str, Path]:
    """`ID=PATH` options as {ID: path}; the file must exist."""
    found = {}
    for option in given:
        key, sep, path = option.partition("=")
        if not sep or not key or not path:
            raise BadLogOption(f"--worker-log {option!r}: expected ID=PATH (ID: instance or role)")
        found[key.strip().lower()] = existing_log(path)
    return found


def existing_log(path: str) -> Path:
    """A log the audit was given, as a path; BadLogOption if there is no such file."""
    log = Path(path)
    if not log.is_file():
        raise BadLogOption(f"log {path} is not a readable file")
    return log


def _read(path: Path | None) -> tuple[str, ...]:
    if path is None:
        return ()
    return tuple(without_colours(path.read_text(errors="replace")).splitlines())


def serving_workers(
    audited: Sequence[AuditedDeployment], logs: Mapping[str, Path]
) -> list[ServingWorker]:
    """Every worker found, with the log given for its instance id or its role."""
    workers = []
    for deployment in audited:
        for worker in deployment.workers:
            instance = worker.instance.instance_id
            path = logs.get(f"{instance:x}") or logs.get(worker.role.lower())
            workers.append(
                ServingWorker(worker.role, None, frozenset({instance}), _read(path), path)
            )
    return workers


def evidence(
    exchanges: Sequence[Exchange],
    audited: Sequence[AuditedDeployment],
    frontend_log: Path | None,
    worker_logs: Mapping[str, Path],
) -> str:
    """What the logs say of each failed probe; "" when every probe was answered."""
    failed = [e for e in exchanges if e.status >= 400]
    if not failed:
        return ""
    if frontend_log is None and not worker_logs:
        ids = ", ".join(e.request_id for e in failed)
        return (
            f"{len(failed)} probe(s) failed; no log was given (--frontend-log PATH, "
            f"--worker-log ID=PATH), so their cause is not shown: look for the request id(s) "
            f"{ids} in the frontend's log (its routing line names the worker_id, the instance "
            "id above) and in that worker's log"
        )
    workers = serving_workers(audited, worker_logs)
    return render_all(failed, _read(frontend_log), workers, frontend_log)
