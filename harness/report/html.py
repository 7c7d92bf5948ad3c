"""report.html: one self-contained page (no network, no script): the matrix in colour, then
per deployment its timeline, its violations and the failing worker's log tail and path."""

from __future__ import annotations

import time
from html import escape

from discovery_harness.report import timeline_svg
from discovery_harness.report.markdown import first_answer_seconds
from discovery_harness.report.model import DeploymentEntry, RunEntry, checkout_line

STYLE = """
body{font-family:sans-serif;margin:24px;color:#111827}
table{border-collapse:collapse;margin:8px 0 24px}
td,th{border:1px solid #d1d5db;padding:4px 8px;font-size:13px;text-align:left}
tr.ok td.verdict{background:#dcfce7}tr.known td.verdict{background:#fef9c3}
tr.failed td{background:#fee2e2}tr.failed td.verdict{background:#fca5a5;font-weight:bold}
section{border-top:2px solid #e5e7eb;padding-top:8px;margin-top:16px}
pre{background:#111827;color:#e5e7eb;padding:8px;font-size:12px;overflow-x:auto}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.badge{padding:2px 6px;border-radius:4px}.badge.failed{background:#fca5a5}
.badge.conformant{background:#bbf7d0}.badge.known-violations{background:#fef08a}
"""


def render(run: RunEntry) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(run.started_at))
    body = [
        f"<h1>Discovery conformance: {escape(run.outcome)}</h1>",
        f"<p><code>{escape(run.command)}</code> on {escape(run.host)}, {started}; "
        f"ai-dynamo {escape(run.release)}, tier {escape(run.tier)}, infra "
        f"{escape(run.infra)}, spawn {escape(run.spawn)}</p>",
        *([f"<p>Dynamo {escape(checkout_line(run))}</p>"] if run.checkout else []),
        _matrix(run),
        _legend(),
        *(_section(d, i) for i, d in enumerate(run.deployments)),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Discovery conformance report</title>"
        f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    )


def _matrix(run: RunEntry) -> str:
    rows = [
        "<table class='matrix'><tr><th>deployment</th><th>topology</th><th>worker</th>"
        "<th>verdict</th><th>card</th><th>first answer</th></tr>"
    ]
    for index, deployment in enumerate(run.deployments):
        for worker in deployment.workers:
            state = (
                "failed"
                if worker.failed
                else {"known-violations": "known"}.get(deployment.verdict, "ok")
            )
            if deployment.verdict == "failed" and not worker.failed:
                shown = "ok (deployment failed)"
            else:
                shown = "FAILED" if worker.failed else deployment.verdict
            observed = worker.observed
            card = (
                ", ".join(observed.get(k, "") for k in ("model_type", "model_input", "worker_type"))
                if observed
                else ("no card" if worker.expected else "must not register")
            )
            answer = first_answer_seconds(deployment, worker)
            rows.append(
                f"<tr class='worker {state}' data-role='{escape(worker.role)}'>"
                f"<td><a href='#d{index}'>{escape(deployment.name)}</a></td>"
                f"<td>{escape(deployment.topology)}</td><td>{escape(worker.role)}</td>"
                f"<td class='verdict'>{escape(shown)}</td><td>{escape(card)}</td>"
                f"<td>{f'{answer:.2f} s' if answer is not None else '-'}</td></tr>"
            )
    rows.append("</table>")
    return "".join(rows)


def _legend() -> str:
    spans = "".join(
        f"<span><svg width='12' height='12'><circle cx='6' cy='6' r='5' fill='{c}'/></svg> "
        f"{escape(what)}</span>"
        for what, c in timeline_svg.COLOURS.items()
    )
    return f"<p class='legend'>{spans}</p>"


def _section(deployment: DeploymentEntry, index: int) -> str:
    parts = [
        f"<section class='deployment' id='d{index}' data-verdict='{escape(deployment.verdict)}'>",
        f"<h2>{escape(deployment.name)} <span class='badge {escape(deployment.verdict)}'>"
        f"{escape(deployment.verdict)}</span></h2>",
        f"<p>topology {escape(deployment.topology)}, namespace "
        f"<code>{escape(deployment.namespace)}</code>, model <code>{escape(deployment.model)}"
        "</code></p>",
        timeline_svg.render(deployment),
    ]
    if deployment.answers:
        answers = ", ".join(f"{a['kind']} {a['status']}" for a in deployment.answers)
        parts.append(f"<p>answers: {escape(answers)}</p>")
    if deployment.violations:
        items = "".join(
            f"<li><b>{escape(str(v['kind']))}</b> {escape(str(v.get('role') or ''))}"
            f"<pre>{escape(str(v['message']))}</pre></li>"
            for v in deployment.violations
        )
        parts.append(f"<h3>Violations</h3><ul>{items}</ul>")
    for known in deployment.known:
        parts.append(f"<p>known violation (not failed): {escape(known)}</p>")
    for worker in deployment.workers:
        if worker.failed:
            parts.append(
                f"<div class='failing-worker' data-role='{escape(worker.role)}'>"
                f"<h3>{escape(worker.role)} (pid {worker.pid}): last log lines</h3>"
                f"<pre>{escape(worker.log_tail or '(no log)')}</pre>"
                f"<p>full log: <code>{escape(worker.log_path or '-')}</code></p></div>"
            )
    parts.append("</section>")
    return "".join(parts)
