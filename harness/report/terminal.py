"""What a run's terminal lines show of a finding: readable at a glance, whole in the files.

A known violation's observed text can hold an answer's body (an image diffusion answer is a
base64 PNG of a thousand characters); the terminal shows its start and its size, the JUnit
property keeps it whole. The timeline names each row by topology (the row itself says the
role), never by a test path cut from the left.
"""

from __future__ import annotations

OBSERVED = "; observed: "  # between a known violation's reason and what was seen
REASON_CHARS = 160  # of a known violation's reason (the catalogue's; whole in report.md)
OBSERVED_CHARS = 160  # of what was seen (an answer's status line and its body's start)
LABEL_CHARS = 34  # the timeline's first column


def cut(text: str, limit: int) -> str:
    """`text` whole when it fits `limit`, else its start and its full size."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()}… ({len(text):,} chars)"


def known_violation(text: str) -> str:
    """A known violation's property (`[kind] reason; observed: message`) as one readable line:
    each part cut to its length, with its size."""
    reason, found, observed = text.partition(OBSERVED)
    if not found:
        return cut(text, REASON_CHARS + OBSERVED_CHARS)
    return f"{cut(reason, REASON_CHARS)}{OBSERVED}{cut(observed, OBSERVED_CHARS)}"


def timeline_label(nodeid: str, topology: str) -> str:
    """The timeline's first column for a row: the test's parameter where it names the
    topology (`mm-encode-pd:mm-encoder>mm-worker`, a start order), else the topology; cut
    on the right, never from the left."""
    param = nodeid[nodeid.index("[") + 1 : -1] if nodeid.endswith("]") and "[" in nodeid else ""
    label = param if topology and param.startswith(topology) else topology or param
    if len(label) > LABEL_CHARS:
        return label[: LABEL_CHARS - 1] + "…"
    return label
