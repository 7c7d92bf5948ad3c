"""What a benchmark prints, kept: every line goes to the terminal as it comes and, once the
run ends, into a dated Markdown file (bench/RESULTS.md) with the machine and the command, so
the figures people read are the ones the benchmark wrote, never copied by hand."""

from __future__ import annotations

import os
import re
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

    def write(self, path: Path = RESULTS, release: str = "", section: str | None = None) -> Path:
        """The whole run as Markdown: when, where, what ran, then every line it printed.
        Without `section` it replaces the file's main part; with one, only that section
        (another benchmark's figures, e.g. the flake budget's), kept across main rewrites."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started))
        machine = f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB"
        command = " ".join(["python -m", _module(), *sys.argv[1:]])
        header = [
            f"{'##' if section else '#'} {self.title}",
            "",
            f"Written by `{command}` on {when}; machine: {machine}"
            + (f"; ai-dynamo {release}" if release else "")
            + ". Re-run the command to replace this "
            + ("section" if section else "file")
            + "; do not edit it by hand.",
            "",
        ]
        body = "\n".join([*header, *self.lines]).rstrip() + "\n"
        old = path.read_text() if path.exists() else ""
        main, sections = _split(old)
        if section is None:
            main = body
        else:
            sections[section] = body
        kept = [f"{_BEGIN.format(n)}\n{text}{_END.format(n)}\n" for n, text in sections.items()]
        path.write_text("\n".join([main.rstrip() + "\n", *kept]).lstrip("\n"))
        return path


_BEGIN = "<!-- section {} -->"
_END = "<!-- end {} -->"
_SECTION = re.compile(
    r"<!-- section (?P<name>\S+) -->\n(?P<text>.*?)<!-- end (?P=name) -->\n?", re.S
)


def _split(text: str) -> tuple[str, dict[str, str]]:
    """A results file's main part and its named sections."""
    sections = {m["name"]: m["text"] for m in _SECTION.finditer(text)}
    return _SECTION.sub("", text).rstrip() + "\n", sections


def _module() -> str:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return spec.name if spec is not None else Path(sys.argv[0]).stem
