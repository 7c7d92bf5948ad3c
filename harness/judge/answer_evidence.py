"""The cause beside a failed answer: what the frontend and the worker that served it logged.

Every request the harness sends carries an `x-request-id` of its own, which the frontend
writes into each line of the request's span (`x_request_id="harness-…"`), among them its
routing decision (`Selected worker … worker_id=N`) and its error. The worker id is the serving
instance's id in etcd, so the worker is known by role and pid, and its log lines in the
request's window (errors, tracebacks) are its side of the story. The frontend's own state
changes just before the request (a worker set removed, a router deactivated, a model
removed) are often the cause: they are shown too. Pure: the caller reads the logs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from discovery_harness.judge.canary import line_time
from discovery_harness.serving.http_client import Exchange

_WORKER_ID = re.compile(r"\bworker_id=(\d+)")
_SEVERE = re.compile(r"Z\s+(ERROR|WARN)\s")
_ROUTED = "Selected worker"
# The frontend changing what it routes to: the usual cause of an error just after.
_STATE_CHANGE = re.compile(
    r"Removed worker set|router deactivated|Removed WorkerSet|removed model|Removed empty model"
    r"|Removing|deactivated|Rejected incompatible",
    re.IGNORECASE,
)
# The system server's access line for each error it answered (a worker's: the harness's own
# /health reads while not ready; the frontend's: every failed request): never a cause.
PROBE_ANSWER = "tower_http::trace::on_failure"
STATE_WINDOW_S = 3.0  # how far back the frontend's state changes are looked for
WORKER_MARGIN_S = 0.05  # the worker prints its traceback before the frontend answers
MOST_LINES = 8
LINE_CHARS = 320
MOST_ANSWERS = 3


@dataclass(frozen=True)
class ServingWorker:
    """A worker the frontend may route to: who it is, its instance ids, its log."""

    role: str
    pid: int | None
    instance_ids: frozenset[int]
    log_lines: tuple[str, ...]
    log_path: Path | None = None

    @property
    def named(self) -> str:
        """`worker 'decode' (pid 12)`; by its instance where the harness did not start it."""
        if self.pid is not None:
            return f"worker '{self.role}' (pid {self.pid})"
        instances = ", ".join(f"{i:x}" for i in sorted(self.instance_ids))
        return f"worker '{self.role}' (instance {instances})"


@dataclass(frozen=True)
class AnswerEvidence:
    exchange: Exchange
    frontend_lines: tuple[str, ...]
    state_changes: tuple[str, ...]
    served_by: ServingWorker | None
    worker_lines: tuple[str, ...]
    # The frontend named no worker (releases before 1.x log no routing line at INFO): every
    # worker that logged an error in the request's window, with those lines.
    suspects: tuple[tuple[ServingWorker, tuple[str, ...]], ...] = ()

    def render(self, frontend_log: Path | None = None) -> str:
        e = self.exchange
        head = f"answer {e.describe()[:200]}"
        parts = [head + (f"  (x-request-id {e.request_id})" if e.request_id else "")]
        parts.append(block("the frontend's lines for this request", self.frontend_lines))
        if self.state_changes:
            parts.append(block("the frontend's routing changes just before", self.state_changes))
        if self.served_by is None:
            parts.append("  served by: no worker named in the frontend's log for this request")
            for worker, lines in self.suspects:
                parts.append(block(f"{worker.named} logged errors near the request", lines))
        else:
            who = self.served_by.named
            # A 200 judged wrong has no error to show: the worker's lines then are its story.
            what = "lines" if e.status == 200 else "errors"
            parts.append(
                block(f"served by {who}: its {what} in the request's window", self.worker_lines)
            )
        logs = [f"frontend {frontend_log}"] if frontend_log else []
        if self.served_by is not None and self.served_by.log_path is not None:
            logs.append(f"{self.served_by.role} {self.served_by.log_path}")
        if logs:
            parts.append("  full logs: " + ", ".join(logs))
        return "\n".join(parts)


def block(title: str, lines: Sequence[str]) -> str:
    """`  title:` over the last lines, each cut to a readable length (`(none)`: no line)."""
    shown = "\n".join(f"    | {_cut(line)}" for line in lines[-MOST_LINES:]) or "    (none)"
    return f"  {title}:\n{shown}"


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def explain(
    exchange: Exchange, frontend_lines: Sequence[str], workers: Sequence[ServingWorker]
) -> AnswerEvidence:
    """What the logs say of one answer (lines without colours)."""
    rid = exchange.request_id
    mine = [line for line in frontend_lines if rid and rid in line]
    severe = [line for line in mine if _SEVERE.search(line) and PROBE_ANSWER not in line]
    routed = [line for line in mine if _ROUTED in line]
    start = exchange.sent_at or exchange.wall_time
    changes = [
        line
        for line in frontend_lines
        if _STATE_CHANGE.search(line) and _within(line, start - STATE_WINDOW_S, start)
    ]
    served = _served_by(routed, workers)
    end = exchange.wall_time + WORKER_MARGIN_S
    every = exchange.status == 200
    worker_lines = errors_in_window(served.log_lines, start, end, every) if served else []
    suspects: tuple[tuple[ServingWorker, tuple[str, ...]], ...] = ()
    if served is None:
        windows = ((w, tuple(errors_in_window(w.log_lines, start, end))) for w in workers)
        suspects = tuple((w, lines) for w, lines in windows if lines)
        if not suspects:  # no stamped line near the request (0.7.1 logs none per request)
            lasts = ((w, tuple(_last_unstamped_traceback(w.log_lines, end))) for w in workers)
            suspects = tuple((w, lines) for w, lines in lasts if lines)
    return AnswerEvidence(
        exchange,
        tuple([*routed[-1:], *severe]),
        tuple(changes),
        served,
        tuple(worker_lines),
        suspects,
    )


def render_all(
    exchanges: Sequence[Exchange],
    frontend_lines: Sequence[str],
    workers: Sequence[ServingWorker],
    frontend_log: Path | None = None,
) -> str:
    """The evidence of the first failed answers (the rest are counted)."""
    shown = [explain(e, frontend_lines, workers).render(frontend_log) for e in exchanges]
    more = len(exchanges) - MOST_ANSWERS
    text = "\n\n".join(shown[:MOST_ANSWERS])
    return text + (f"\n\n({more} more failed answer(s) not shown)" if more > 0 else "")


def _served_by(routed: Sequence[str], workers: Sequence[ServingWorker]) -> ServingWorker | None:
    for line in reversed(routed):
        match = _WORKER_ID.search(line)
        if match is None:
            continue
        worker_id = int(match.group(1))
        for worker in workers:
            if worker_id in worker.instance_ids:
                return worker
    return None


def _within(line: str, start: float, end: float) -> bool:
    stamp = line_time(line)
    return stamp is not None and start <= stamp <= end


def errors_in_window(
    lines: Sequence[str], start: float, end: float, every: bool = False
) -> list[str]:
    """The worker's ERROR/WARN lines stamped within [start, end] and the tracebacks printed
    there (a traceback's lines carry no stamp: they belong to the last stamped line); with
    `every`, each of its lines there (what it printed too)."""
    found: list[str] = []
    inside = in_traceback = False
    for line in lines:
        stamp = line_time(line)
        if stamp is not None:
            inside, in_traceback = start - 0.05 <= stamp <= end, False
            wanted = every or _SEVERE.search(line)
            if inside and wanted and PROBE_ANSWER not in line:
                found.append(line)
        elif inside and every and line.strip():
            found.append(line)
        elif inside and line.startswith("Traceback"):
            in_traceback = True
            found.append(line)
        elif in_traceback and line.strip():
            found.append(line)
            in_traceback = line.startswith(" ")  # the exception's own line ends it
    return found


def _last_unstamped_traceback(lines: Sequence[str], end: float) -> list[str]:
    """The last traceback printed after the log's last stamped line before `end` (a log
    with no stamp around the request cannot place it better)."""
    stamps = [line_time(line) for line in lines]
    last = max((i for i, t in enumerate(stamps) if t is not None and t <= end), default=-1)
    stop = next((i for i in range(last + 1, len(lines)) if stamps[i] is not None), len(lines))
    starts = [i for i in range(last + 1, stop) if lines[i].startswith("Traceback")]
    if not starts:
        return []
    block = [lines[starts[-1]]]
    for line in lines[starts[-1] + 1 : stop]:
        if not line.strip():
            break
        block.append(line)
        if not line.startswith(" "):
            break  # the exception's own line ends it
    return block
