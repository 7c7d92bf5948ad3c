"""report.md: the matrix (deployment x worker: verdict, card, seconds to first answer) and
every violation; GitHub shows it on the run's page when appended to the step summary."""

from __future__ import annotations

import time

from discovery_harness.common.markdown import row
from discovery_harness.report.model import DeploymentEntry, RunEntry, WorkerEntry, checkout_line

FIRST_ANSWER = "first-answer"


def render(run: RunEntry) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(run.started_at))
    lines = [
        f"## Discovery conformance: {run.outcome}",
        "",
        f"`{run.command}` on {run.host}, {started}; ai-dynamo {run.release}, tier {run.tier}, "
        f"infra {run.infra}, spawn {run.spawn}; {len(run.deployments)} deployment(s), "
        f"{sum(t['outcome'] != 'deselected' for t in run.tests)} test(s)",
        *([f"Dynamo checkout: {checkout_line(run)}"] if run.checkout else []),
        "",
        "| topology | worker | verdict | card (type, input, worker_type, needs) | first answer |",
        "|---|---|---|---|---|",
    ]
    for deployment in run.deployments:
        shown: list[WorkerEntry | None] = [*deployment.workers] or [None]
        for worker in shown:
            lines.append(_row(deployment, worker))
    problems = [d for d in run.deployments if d.violations or d.known]
    if problems:
        lines += ["", "### Violations", ""]
    for deployment in problems:
        lines.append(f"**{deployment.name}** ({deployment.namespace}):")
        lines.append("")
        for violation in deployment.violations:
            text = " ".join(str(violation["message"]).split())[:600]
            lines.append(f"- `{violation['kind']}` {violation.get('role') or ''}: {text}")
        lines += [f"- known (not failed): {' '.join(k.split())[:400]}" for k in deployment.known]
        lines.append("")
    failed_tests = [t for t in run.tests if t["outcome"] in ("failed", "error")]
    if failed_tests:
        lines += ["", "### Failed tests", ""]
        lines += [f"- `{t['id']}`: {t['outcome']}" for t in failed_tests]
    return "\n".join(lines) + "\n"


def _row(deployment: DeploymentEntry, worker: WorkerEntry | None) -> str:
    if worker is None:
        return row(deployment.topology, "-", _verdict(deployment.verdict), "-", "-")
    observed = worker.observed
    card = (
        ", ".join(
            observed.get(k, "") for k in ("model_type", "model_input", "worker_type", "needs")
        )
        if observed
        else ("no card" if worker.expected else "must not register")
    )
    verdict = "FAILED" if worker.failed else _verdict(deployment.verdict, worker=True)
    answer = first_answer_seconds(deployment, worker)
    shown = f"{answer:.2f} s" if answer is not None else "-"
    return row(deployment.topology, worker.role, verdict, card, shown)


def _verdict(verdict: str, worker: bool = False) -> str:
    if verdict == "failed":
        return "ok (deployment failed)" if worker else "FAILED"
    return {"conformant": "ok", "known-violations": "ok (known violation)"}.get(verdict, verdict)


def first_answer_seconds(deployment: DeploymentEntry, worker: WorkerEntry) -> float | None:
    """Seconds from the worker's process start (or first sight) to the first good answer."""
    answered = next((m.at for m in deployment.frontend if m.what == FIRST_ANSWER), None)
    start = next((m.at for m in worker.events), None)
    if answered is None or start is None:
        return None
    return answered - start
