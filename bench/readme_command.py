"""The README's test command, as pytest arguments, read from a checkout's own README: each
checkout is timed with the command it tells a fresh machine to run (`-n 2` before `-n auto`)."""

from __future__ import annotations

from pathlib import Path

PREFIX = "    .venv/bin/python -m pytest"


def readme_test_args(checkout: Path) -> list[str]:
    """The arguments after `python -m pytest` of the README's first indented pytest command."""
    for line in (checkout / "README.md").read_text().splitlines():
        if line == PREFIX or line.startswith(PREFIX + " "):
            return line.split()[3:]
    raise ValueError(f"{checkout / 'README.md'} gives no `.venv/bin/python -m pytest` command")
