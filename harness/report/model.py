"""The report's data: one run, its deployments, their workers and timelines.

Schema `discovery-harness-report`, version 1 (report.json). Times are Unix seconds. A field
added later keeps the version; a field renamed or removed bumps it.

run: schema, version, command, started_at, finished_at, release, tier, infra, spawn, host,
     outcome (passed / failed / no tests), tests [{id, outcome (passed / failed / error /
     skipped / deselected), seconds}], deployments [...], checkout (--dynamo-src: {path,
     commit, subject, dirty, version, sglang_pin}; null for an installed release)
deployment: name, test, topology, namespace, model, verdict (conformant / failed /
     known-violations), started_at, workers [...], frontend [marks], answers [{kind, status,
     ok, problem}], violations [{kind, role, message}], known [text]
worker: role, pid, start_path, component, instance (etcd key), expected {field: value},
     observed {field: value}, events [marks], violations [{kind, message}], log_path, log_tail,
     failed
mark: at, what (process-start / serving / card / listed / first-answer / answer /
     violation), detail (the etcd key, the status, the violation's kind)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

SCHEMA, VERSION = "discovery-harness-report", 1
PASSED, FAILED, NO_TESTS = "passed", "failed", "no tests"


@dataclass
class Mark:
    at: float
    what: str
    detail: str = ""


@dataclass
class WorkerEntry:
    role: str
    pid: int | None
    start_path: str
    component: str
    instance: str | None = None
    expected: dict[str, str] | None = None
    observed: dict[str, str] | None = None
    events: list[Mark] = field(default_factory=list)
    violations: list[dict[str, str]] = field(default_factory=list)
    log_path: str | None = None
    log_tail: str = ""
    failed: bool = False


@dataclass
class DeploymentEntry:
    name: str
    topology: str
    namespace: str
    model: str
    verdict: str
    started_at: float | None = None
    test: str | None = None
    workers: list[WorkerEntry] = field(default_factory=list)
    frontend: list[Mark] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, str | None]] = field(default_factory=list)
    known: list[str] = field(default_factory=list)


@dataclass
class RunEntry:
    command: str
    started_at: float
    finished_at: float
    release: str
    tier: str
    infra: str
    spawn: str
    host: str
    outcome: str = PASSED
    tests: list[dict[str, Any]] = field(default_factory=list)
    deployments: list[DeploymentEntry] = field(default_factory=list)
    checkout: dict[str, Any] | None = None  # --dynamo-src: the checkout and its commit
    schema: str = SCHEMA
    version: int = VERSION


def checkout_line(run: RunEntry) -> str:
    """The checkout a run drove (--dynamo-src), in words; "" for an installed release."""
    found = run.checkout
    if not found:
        return ""
    commit = str(found.get("commit") or "no commit")[:12]
    state = {True: "dirty", False: "clean"}.get(found.get("dirty"), "not a git work tree")  # type: ignore[arg-type]
    subject = f"{found['subject']!r}; " if found.get("subject") else ""
    where = f"checkout {found.get('path')} at {commit}"
    return f"{where} ({subject}{state}) over ai-dynamo {run.release}"


def as_dict(run: RunEntry) -> dict[str, Any]:
    return dataclasses.asdict(run)


def run_from_dict(data: dict[str, Any]) -> RunEntry:
    deployments = [deployment_from_dict(d) for d in data.get("deployments", [])]
    fields = {f.name for f in dataclasses.fields(RunEntry)} - {"deployments"}
    return RunEntry(**{k: v for k, v in data.items() if k in fields}, deployments=deployments)


def deployment_from_dict(data: dict[str, Any]) -> DeploymentEntry:
    workers = [
        WorkerEntry(**{**w, "events": [Mark(**m) for m in w.get("events", [])]})
        for w in data.get("workers", [])
    ]
    frontend = [Mark(**m) for m in data.get("frontend", [])]
    rest = {k: v for k, v in data.items() if k not in ("workers", "frontend")}
    return DeploymentEntry(**rest, workers=workers, frontend=frontend)
