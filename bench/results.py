"""What a benchmark prints, kept: every line goes to the terminal as it comes and, once the
run ends, into a dated Markdown file (bench/RESULTS.md) with the machine and the command, so
the figures people read are the ones the benchmark wrote, never copied by hand."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


@dataclass
class Results:
    title: str
    lines: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)

    def say(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def table(self, header: tuple[str, ...]) -> None:
        self.say("| " + " | ".join(header) + " |")
        self.say("|" + "---|" * len(header))

    def row(self, *cells: str) -> None:
        self.say("| " + " | ".join(cells) + " |")

    def write(self, path: Path = RESULTS, release: str = "") -> Path:
        """The whole run as Markdown: when, where, what ran, then every line it printed."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started))
        machine = f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB"
        command = " ".join(["python -m", _module(), *sys.argv[1:]])
        header = [
            f"# {self.title}",
            "",
            f"Written by `{command}` on {when}; machine: {machine}"
            + (f"; ai-dynamo {release}" if release else "")
            + ". Re-run the command to replace this file; do not edit it by hand.",
            "",
        ]
        path.write_text("\n".join([*header, *self.lines]).rstrip() + "\n")
        return path


def _module() -> str:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return spec.name if spec is not None else Path(sys.argv[0]).stem
