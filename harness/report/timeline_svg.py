"""One deployment's timeline as an inline SVG: a lane per worker and one for the frontend,
a mark per event; hovering a mark shows its `<title>` (what, when, the etcd key)."""

from __future__ import annotations

import time
from html import escape

from discovery_harness.report.model import DeploymentEntry, Mark

WIDTH, LANE, LABEL, PAD, RADIUS = 960, 34, 170, 16, 6
COLOURS = {
    "process-start": "#6b7280",
    "serving": "#2563eb",
    "card": "#16a34a",
    "ready": "#0891b2",  # /health first said ready (the readiness probe)
    "health": "#ea580c",  # /health changed after it was ready
    "listed": "#7c3aed",
    "first-answer": "#065f46",
    "answer": "#d97706",
    "violation": "#dc2626",
}


def render(deployment: DeploymentEntry) -> str:
    lanes: list[tuple[str, list[Mark], bool]] = [
        (w.role, w.events, w.failed) for w in deployment.workers
    ]
    lanes.append(("frontend", deployment.frontend, False))
    stamps = [m.at for _, marks, _ in lanes for m in marks]
    start = min(stamps, default=0.0)
    span = max(max(stamps, default=0.0) - start, 0.001)
    height = LANE * len(lanes) + 2 * PAD + 18
    usable = WIDTH - LABEL - 2 * PAD
    parts = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="timeline of {escape(deployment.name)}">'
    ]
    for index, (role, marks, failed) in enumerate(lanes):
        y = PAD + index * LANE
        kind = "frontend" if role == "frontend" and index == len(lanes) - 1 else "worker"
        classes = f"lane {kind}" + (" failed" if failed else "")
        parts.append(f'<g class="{classes}" data-role="{escape(role)}">')
        fill = "#fee2e2" if failed else ("#f3f4f6" if index % 2 else "#ffffff")
        parts.append(f'<rect x="0" y="{y}" width="{WIDTH}" height="{LANE}" fill="{fill}"/>')
        parts.append(
            f'<text x="8" y="{y + LANE / 2 + 4}" font-size="13" '
            f'font-family="sans-serif">{escape(role)}{" ✗" if failed else ""}</text>'
        )
        mid = y + LANE / 2
        parts.append(
            f'<line x1="{LABEL}" y1="{mid}" x2="{WIDTH - PAD}" y2="{mid}" stroke="#d1d5db"/>'
        )
        placed: list[float] = []
        for mark in sorted(marks, key=lambda m: m.at):
            x = LABEL + PAD + usable * (mark.at - start) / span
            # Marks of one instant side by side in height, so each keeps its own hover.
            crowd = sum(1 for other in placed if abs(other - x) < 2 * RADIUS)
            placed.append(x)
            shift = 0 if crowd == 0 else (-1) ** crowd * min(crowd, 2) * RADIUS * 0.8
            parts.append(_mark(mark, x, mid + shift, mark.at - start))
        parts.append("</g>")
    axis_y = PAD + len(lanes) * LANE + 14
    parts.append(
        f'<text x="{LABEL + PAD}" y="{axis_y}" font-size="11" font-family="sans-serif">0 s</text>'
        f'<text x="{WIDTH - PAD}" y="{axis_y}" font-size="11" font-family="sans-serif" '
        f'text-anchor="end">+{span:.2f} s</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _mark(mark: Mark, x: float, y: float, offset: float) -> str:
    colour = COLOURS.get(mark.what, "#111827")
    clock = time.strftime("%H:%M:%S", time.gmtime(mark.at)) + f"{mark.at % 1:.3f}"[1:]
    title = f"{mark.what} at {clock} UTC (+{offset:.3f} s)" + (
        f": {mark.detail}" if mark.detail else ""
    )
    tip = f"<title>{escape(title)}</title>"
    if mark.what == "violation":
        return (
            f'<g class="mark violation">{tip}<path d="M{x - 6} {y - 6} L{x + 6} {y + 6} '
            f'M{x - 6} {y + 6} L{x + 6} {y - 6}" stroke="{colour}" stroke-width="3"/></g>'
        )
    return (
        f'<g class="mark {escape(mark.what)}">{tip}<circle cx="{x:.1f}" cy="{y:.1f}" r="{RADIUS}" '
        f'fill="{colour}"/></g>'
    )
