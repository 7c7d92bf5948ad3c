"""Markdown table cells, escaped once for every table the harness writes (report.md, the
generated docs): a `|` inside a cell (a card's `Chat | Completions`) or a line break would
otherwise split the row into extra columns on GitHub."""

from __future__ import annotations


def cell(text: object) -> str:
    """`text` as one table cell: pipes escaped, line breaks and runs of blanks as one space."""
    return " ".join(str(text).split()).replace("|", "\\|")


def row(*cells: object) -> str:
    """One table row of exactly these cells."""
    return "| " + " | ".join(cell(c) for c in cells) + " |"
