"""The README stays one page of one purpose (what it is, the two commands, running parts, one
real failure, links) and the docs it hands the rest to stay reachable: every docs/*.md linked
from it, every relative link and anchor in it and in docs/ resolving, its fresh-machine
commands the ones CI runs (issue 23, item 4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 250

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$")


def _markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md")), *sorted((ROOT / "bench").glob("*.md"))]


def _outside_code(text: str) -> list[str]:
    """The lines outside fenced code blocks (a `#` or a `[x](y)` in code is not Markdown)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: formatting marks and punctuation dropped, lower case,
    spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (a repeated one numbered as GitHub does)."""
    seen: dict[str, int] = {}
    found = set()
    for line in _outside_code(path.read_text()):
        match = HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    links = []
    for line in _outside_code(path.read_text()):
        for target in LINK.findall(line):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
                links.append(target)
    return links


def broken_links(path: Path) -> list[str]:
    """Each relative link of a file whose file, or whose anchor in it, does not exist."""
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    return broken


def test_the_readme_is_at_most_250_lines():
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines (at most {MAX_README_LINES}): move detail into docs/"
    )


def test_every_doc_is_linked_from_the_readme():
    linked = {
        (ROOT / target.partition("#")[0]).resolve()
        for target in relative_links(README)
        if target.partition("#")[0]
    }
    unlinked = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert unlinked == [], f"docs not linked from README.md: {unlinked}"


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


def test_a_broken_link_or_anchor_is_found(tmp_path, monkeypatch):
    """The link check can fail: a missing file and a missing heading are both reported."""
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "other.md").write_text("# Other\n\n## The GPU job: one script\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#the-gpu-job-one-script) [gone](missing.md) [bad](other.md#nope)\n"
        "```\n[in code](also-missing.md)\n```\n[web](https://example.com/x.md)\n"
    )
    assert broken_links(page) == [
        "page.md: missing.md (no such file)",
        "page.md: other.md#nope (no such heading)",
    ]


def test_anchors_are_githubs():
    assert slug("`up`: one topology running, by hand") == "up-one-topology-running-by-hand"
    assert slug("On a fresh machine (Debian, root)") == "on-a-fresh-machine-debian-root"
    assert slug("Answers (1.6.1, from the request shapes)") == "answers-161-from-the-request-shapes"


def _fresh_machine_commands() -> list[str]:
    text = README.read_text()
    section = text.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def _ci_run_commands() -> list[str]:
    """The command lines of .ci/run, comments and trailing `|| ...` handling left off."""
    commands = []
    for line in (ROOT / ".ci" / "run").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            commands.append(line.split(" || ", 1)[0].strip())
    return commands


def test_the_readmes_fresh_machine_commands_are_the_ones_ci_runs():
    """Two commands: set up then the conformance suite on the embedded default infra, and the
    tests. .ci/run runs the set-up and the test command as written; the CPU workflow runs both
    exactly (tests/test_workflows.py::test_cpu_job_runs_exactly_the_readmes_two_commands)."""
    commands = _fresh_machine_commands()
    assert len(commands) == 2, commands
    setup_and_conformance, tests = commands
    setup, _, conformance = setup_and_conformance.partition(" && ")
    assert setup == "bash ci/setup.sh"
    assert conformance == ".venv/bin/python -m discovery_harness conformance --infra process"
    ci_run = _ci_run_commands()
    assert setup in ci_run
    assert tests == ".venv/bin/python -m pytest -n auto" and tests in ci_run
