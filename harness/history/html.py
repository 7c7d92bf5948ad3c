"""The history as one self-contained HTML page (no scripts, no external files).

Kept apart from the Markdown on purpose: `page` takes the same runs and start-path rows, so the
shared run-report style (harness/report/) can replace this module's markup alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from discovery_harness.history import table
from discovery_harness.history.run import ReleaseRun
from discovery_harness.history.start_paths import CORRECT, StartPathRow

_STYLE = """
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f3f3f3}.ok{background:#e6f4e6}
.bad{background:#fbe3e3}.skip{color:#777}details{margin:.3em 0}code{font-size:12px}
"""


def _class(text: str) -> str:
    if text in (CORRECT, "conformant") or text.startswith("conformant"):
        return "ok"
    if not text or text == "-" or text.startswith("skipped"):
        return "skip"
    return "bad"


def _row(cells: Sequence[str], coloured: range = range(0), header: bool = False) -> str:
    """One table row; the cells at `coloured` get the colour of what they say."""
    tag = "th" if header else "td"
    body = "".join(
        f'<{tag} class="{_class(c)}">{escape(c)}</{tag}>'
        if i in coloured
        else f"<{tag}>{escape(c)}</{tag}>"
        for i, c in enumerate(cells)
    )
    return f"<tr>{body}</tr>"


def page(
    runs: Sequence[ReleaseRun], topologies: Sequence[str], paths: Sequence[StartPathRow]
) -> str:
    releases = [run.release for run in runs]
    parts = [
        "<!doctype html><meta charset=utf-8><title>Dynamo x SGLang conformance history</title>",
        f"<style>{_STYLE}</style><h1>Conformance history</h1>",
        "<h2>Start paths: first release that registered correctly</h2><table>",
        _row(["start path", "first registered correctly", *releases], header=True),
        *(
            _row(
                [r.start_path, r.first_correct, *(r.cells.get(x, "") for x in releases)],
                range(2, 2 + len(releases)),
            )
            for r in paths
        ),
        "</table><h2>Release x topology</h2><table>",
        _row(["release", "topology", "verdict", "registration", "answers", "other"], header=True),
    ]
    details = []
    for run in runs:
        for name in topologies or sorted(run.findings):
            item = run.findings.get(name)
            if item is None:
                continue
            parts.append(_row([run.release, name, *table.cells(item)], range(2, 4)))
            for v in item.violations:
                details.append(
                    f"<details><summary>{escape(run.release)} / {escape(name)} "
                    f"[{escape(v['kind'])}] {escape(v.get('role') or '')}</summary>"
                    f"<pre><code>{escape(v['message'])}</code></pre></details>"
                )
    parts.append("</table><h2>Violations</h2>")
    parts += details or ["<p>none</p>"]
    parts.append("<h2>Environments</h2><ul>")
    parts += [f"<li>{escape(r.release)}: {escape(r.env)}, {r.seconds:.0f} s</li>" for r in runs]
    return "\n".join([*parts, "</ul>"]) + "\n"
