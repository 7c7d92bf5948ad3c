"""`python -m discovery_harness bisect --dynamo-src DIR OLD NEW (--topology NAME ... | -m EXPR)`:
the first commit of a Dynamo checkout whose verdict is NEW's.

OLD and NEW are judged first (the same verdict on both: one error, nothing to find); then
`git bisect` runs over the commits between with the harness's verdict as the oracle, in a
worktree of its own (DIR's HEAD, index and work tree are left as found; the worktree is
removed at the end, Ctrl-C included). A commit whose checkout and runtime do not fit, or
whose verdict is intermittent (unless --intermittent-is-bad) or matches neither end, is
skipped with the reason. The end names the commit, what it introduced (a regression) or
removed (a fix), and the verdicts on both sides, and writes bisect.json / .md / .html.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from discovery_harness.bisect import git
from discovery_harness.bisect.git import NEW, OLD, SKIP, BisectError, Commit
from discovery_harness.bisect.oracle import ERROR, MISFIT, Judgement, Oracle
from discovery_harness.common.exits import USAGE_ERROR
from discovery_harness.history.run import Selection
from discovery_harness.history.stability import CONFORMANT, DEFAULT_RUNS, INTERMITTENT
from discovery_harness.model.catalogue import Catalogue
from discovery_harness.runtime import dynamo_src

REGRESSION, FIX, CHANGE = "regression", "fix", "change"


def add_parser(commands: argparse._SubParsersAction) -> None:
    bisect = commands.add_parser(
        "bisect",
        help="the first commit of a Dynamo checkout whose verdict is NEW's (git bisect with "
        "the harness as the oracle)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bisect.add_argument("old", metavar="OLD", help="a commit with the earlier verdict")
    bisect.add_argument("new", metavar="NEW", help="a later commit with another verdict")
    bisect.add_argument(
        "--dynamo-src",
        default=os.environ.get(dynamo_src.ENV_VARIABLE),
        metavar="DIR",
        help="the Dynamo checkout (a git repository; env HARNESS_DYNAMO_SRC)",
    )
    which = bisect.add_mutually_exclusive_group()
    which.add_argument(
        "--topology",
        action="append",
        default=[],
        metavar="NAME",
        help="judge each commit by this topology's conformance test (repeatable)",
    )
    which.add_argument(
        "-m", dest="markers", default=None, metavar="EXPR", help="or by these markers' tests"
    )
    bisect.add_argument(
        "--dynamo-env",
        default=None,
        metavar="PATH",
        help="run every commit over this release environment (default: the one that fits "
        "each commit's pyproject.toml)",
    )
    bisect.add_argument(
        "--runs",
        type=int,
        metavar="N",
        default=DEFAULT_RUNS,
        help=f"most runs of a non-conformant judgement (default {DEFAULT_RUNS}; stops once two "
        "agree)",
    )
    bisect.add_argument(
        "--intermittent-is-bad",
        action="store_true",
        help="count a violation seen on some runs only as seen (default: skip that commit)",
    )
    bisect.add_argument(
        "--out", default=None, metavar="DIR", help="report folder (default reports/bisect)"
    )


def say(text: str) -> None:
    print(text, flush=True)


@dataclass
class Outcome:
    """What the bisect found, for the report."""

    checkout: str
    selection: str
    old: Judgement
    new: Judgement
    kind: str = CHANGE
    first: Commit | None = None
    candidates: list[str] = field(default_factory=list)
    steps: list[tuple[Judgement, str, str]] = field(default_factory=list)  # (j, mark, why)
    before: Judgement | None = None
    after: Judgement | None = None
    log: str = ""

    def changed(self) -> tuple[list[str], list[str]]:
        before = self.before or self.old
        after = self.after or self.new
        return (
            sorted(after.violations - before.violations),
            sorted(before.violations - after.violations),
        )

    def summary(self) -> list[str]:
        if self.first is None:
            listed = ", ".join(c[:12] for c in self.candidates) or "none"
            return [
                "bisect: no single commit: only skipped commits are left; the first with "
                f"NEW's verdict is one of: {listed}"
            ]
        introduced, removed = self.changed()
        lines = [
            f"bisect: {self.kind.upper()}: the first commit with NEW's verdict is "
            f"{self.first.hash}",
            f"  subject: {self.first.subject}",
            f"  author date: {self.first.date}",
        ]
        if introduced:
            lines.append(f"  it introduced: {'; '.join(introduced)}")
        if removed:
            lines.append(f"  it removed: {'; '.join(removed)}")
        before, after = self.before or self.old, self.after or self.new
        lines.append(f"  before ({before.commit.short}): {before.describe()}")
        lines.append(f"  at it ({after.commit.short}): {after.describe()}")
        return lines

    def as_dict(self) -> dict[str, object]:
        introduced, removed = self.changed()
        return {
            "checkout": self.checkout,
            "selection": self.selection,
            "kind": self.kind,
            "first": None
            if self.first is None
            else {
                "commit": self.first.hash,
                "subject": self.first.subject,
                "date": self.first.date,
            },
            "candidates": self.candidates,
            "introduced": introduced,
            "removed": removed,
            "old": self.old.as_dict(),
            "new": self.new.as_dict(),
            "before": (self.before or self.old).as_dict(),
            "after": (self.after or self.new).as_dict(),
            "steps": [{**j.as_dict(), "mark": m, "why": w} for j, m, w in self.steps],
            "git_bisect_log": self.log,
        }


def _effective(judgement: Judgement, intermittent_is_bad: bool) -> frozenset[str]:
    """The violations a judgement counts as its verdict."""
    if intermittent_is_bad and judgement.stable is not None:
        return frozenset(judgement.stable.seen)
    return judgement.violations


def classify(
    judgement: Judgement, old: Judgement, new: Judgement, intermittent_is_bad: bool
) -> tuple[str, str]:
    """old, new or skip for one commit, and why."""
    if judgement.outcome == MISFIT:
        return SKIP, dynamo_src.MISFIT
    if judgement.outcome == ERROR:
        return SKIP, "could not be judged"
    if judgement.outcome == INTERMITTENT and not intermittent_is_bad:
        return SKIP, "intermittent (--intermittent-is-bad counts it)"
    found = _effective(judgement, intermittent_is_bad)
    if found == _effective(new, intermittent_is_bad):
        return NEW, "NEW's verdict"
    if found == _effective(old, intermittent_is_bad):
        return OLD, "OLD's verdict"
    return SKIP, "a verdict neither end has"


def _unusable_end(name: str, judgement: Judgement, intermittent_is_bad: bool) -> str | None:
    if judgement.outcome in (MISFIT, ERROR):
        return f"{name} ({judgement.commit.short}) cannot be judged: {judgement.reason}"
    if judgement.outcome == INTERMITTENT and not intermittent_is_bad:
        return (
            f"{name} ({judgement.commit.short})'s verdict is intermittent "
            f"({judgement.describe()}): a bisect on it would name the wrong commit "
            "(--intermittent-is-bad counts it)"
        )
    return None


def _short(judgement: Judgement) -> str:
    """A verdict for a progress line: a misfit's or an error's reason without the paths."""
    if judgement.outcome not in (MISFIT, ERROR):
        return judgement.describe()
    reason = judgement.reason.removeprefix(f"{dynamo_src.MISFIT}: ")
    reason = reason.split(" (File ", 1)[0]
    if reason.startswith("the checkout ") and " imports " in reason:
        reason = reason.split(" imports ", 1)[1].split(" of /", 1)[0]
        reason = f"imports {reason} lacks"
    return f"{judgement.outcome}: {reason[:150]}"


def _progress(label: str, judgement: Judgement, mark: str, why: str = "") -> str:
    subject = judgement.commit.subject[:48]
    reason = f" ({why})" if why and mark == SKIP else ""
    return (
        f"bisect: {label:<7} {judgement.commit.short}  {subject!r:<50}  "
        f"{_short(judgement)}  -> {mark}{reason}  {judgement.seconds:.0f} s"
    )


def bisect_command(args: argparse.Namespace, catalogue: Catalogue) -> int:
    try:
        if not args.dynamo_src:
            raise ValueError("--dynamo-src DIR: the checkout to bisect (a git repository)")
        if not args.topology and not args.markers:
            raise ValueError("--topology NAME ... or -m EXPR: what to judge each commit by")
        if args.runs < 1:
            raise ValueError(f"--runs {args.runs}: at least 1")
        selection = Selection(
            topologies=tuple(t.name for t in catalogue.select(args.topology))
            if args.topology
            else (),
            markers=args.markers,
        )
        source = Path(args.dynamo_src).expanduser().absolute()
        dynamo_src.read(source)  # a checkout at all
        top = git.git(source, "rev-parse", "--show-toplevel").stdout.strip()
        inside = source.resolve().relative_to(Path(top).resolve())
        old, new = git.resolve(source, args.old), git.resolve(source, args.new)
        between = git.check_order(source, old, new)
    except (ValueError, KeyError) as bad:
        print(f"harness bisect: error: {bad.args[0] if bad.args else bad}", file=sys.stderr)
        return USAGE_ERROR
    out_dir = Path(args.out) if args.out else Path("reports") / "bisect"
    out_dir.mkdir(parents=True, exist_ok=True)
    say(
        f"bisect: {source} from {old[:12]} (OLD) to {new[:12]} (NEW), {between} commit(s) "
        f"between; judged by {selection.describe()}; runs in a worktree of its own"
    )
    try:
        with git.worktree(source, old) as tree:
            outcome = _bisect(tree, tree / inside, old, new, selection, out_dir, args)
    except KeyboardInterrupt:
        say(f"bisect: interrupted; its worktree removed, {source} as it was")
        return 130
    except BisectError as failed:
        print(f"harness bisect: error: {failed}", file=sys.stderr)
        return 1
    if outcome is None:
        return 1
    outcome.checkout = str(source)
    for line in outcome.summary():
        say(line)
    written = write_report(outcome, out_dir)
    say(f"(written: {', '.join(str(p) for p in written)})")
    return 0 if outcome.first is not None else 1


def _bisect(
    tree: Path,
    checkout: Path,
    old: str,
    new: str,
    selection: Selection,
    out_dir: Path,
    args: argparse.Namespace,
) -> Outcome | None:
    oracle = Oracle(checkout, selection, out_dir, args.dynamo_env, args.runs)
    lenient = args.intermittent_is_bad
    judged: dict[str, Judgement] = {}
    for label, rev in (("OLD", old), ("NEW", new)):
        git.checkout(tree, rev)
        judged[rev] = oracle.judge(git.commit(tree, rev))
        say(_progress(label, judged[rev], label.lower()))
    ends = [_unusable_end(n, judged[r], lenient) for n, r in (("OLD", old), ("NEW", new))]
    if any(ends):
        print(f"harness bisect: error: {'; '.join(e for e in ends if e)}", file=sys.stderr)
        return None
    if _effective(judged[old], lenient) == _effective(judged[new], lenient):
        print(
            f"harness bisect: error: OLD and NEW have the same verdict "
            f"({judged[new].describe()}): nothing changed between them to find",
            file=sys.stderr,
        )
        return None
    outcome = Outcome("", selection.describe(), judged[old], judged[new])
    if judged[old].outcome == CONFORMANT:
        outcome.kind = REGRESSION
    elif judged[new].outcome == CONFORMANT:
        outcome.kind = FIX
    say(f"bisect: a {outcome.kind}: OLD {judged[old].describe()}; NEW {judged[new].describe()}")
    step = git.start(tree, old, new)
    number = 0
    while step.next is not None:
        number += 1
        commit = git.commit(tree, step.next)
        judgement = oracle.judge(commit)
        judged[commit.hash] = judgement
        mark, why = classify(judgement, judged[old], judged[new], lenient)
        outcome.steps.append((judgement, mark, why))
        say(_progress(f"step {number}", judgement, mark, why))
        step = git.mark(tree, mark)
    outcome.log = git.log(tree)
    outcome.candidates = list(step.candidates)
    if step.first is not None:
        outcome.first = git.commit(tree, step.first)
        parent = git.git(tree, "rev-parse", f"{step.first}^").stdout.strip()
        outcome.after = judged.get(step.first, judged[new])
        outcome.before = judged.get(parent, judged[old])
    return outcome


def markdown(outcome: Outcome) -> str:
    lines = [
        f"## Bisect of {outcome.checkout}: {outcome.kind}",
        "",
        f"Judged by {outcome.selection}. OLD {outcome.old.commit.describe()}: "
        f"{outcome.old.describe()}. NEW {outcome.new.commit.describe()}: "
        f"{outcome.new.describe()}.",
        "",
        *(f"    {line}" for line in outcome.summary()),
        "",
        "| step | commit | subject | verdict | mark | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for number, (judgement, mark, why) in enumerate(outcome.steps, 1):
        shown = f"{mark} ({why})" if mark == SKIP else mark
        lines.append(
            f"| {number} | `{judgement.commit.short}` | {judgement.commit.subject} | "
            f"{judgement.describe()} | {shown} | {judgement.seconds:.0f} |"
        )
    return "\n".join(lines) + "\n"


def html_page(outcome: Outcome) -> str:
    """The same as markdown(), as a page: the summary, then the steps as a table."""
    rows = "".join(
        f"<tr><td>{number}</td><td><code>{escape(j.commit.short)}</code></td>"
        f"<td>{escape(j.commit.subject)}</td><td>{escape(j.describe())}</td>"
        f"<td>{escape(f'{mark} ({why})' if mark == SKIP else mark)}</td>"
        f"<td>{j.seconds:.0f}</td></tr>"
        for number, (j, mark, why) in enumerate(outcome.steps, 1)
    )
    summary = escape("\n".join(outcome.summary()))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Bisect</title>'
        "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
        "td,th{border:1px solid #bbb;padding:.3em .6em;text-align:left;vertical-align:top}"
        "pre{background:#f4f4f4;padding:.8em;white-space:pre-wrap}</style></head><body>"
        f"<h1>Bisect: {escape(outcome.kind)}</h1><p>{escape(str(outcome.checkout))}, judged "
        f"by {escape(outcome.selection)}.</p><p>OLD {escape(outcome.old.commit.describe())}: "
        f"{escape(outcome.old.describe())}<br>NEW {escape(outcome.new.commit.describe())}: "
        f"{escape(outcome.new.describe())}</p><pre>{summary}</pre>"
        "<table><tr><th>step</th><th>commit</th><th>subject</th><th>verdict</th><th>mark</th>"
        f"<th>seconds</th></tr>{rows}</table></body></html>\n"
    )


def write_report(outcome: Outcome, out_dir: Path) -> list[Path]:
    text = markdown(outcome)
    files = {
        "bisect.json": json.dumps(
            {
                "schema": "discovery-harness-bisect",
                "version": 1,
                "written_at": time.time(),
                **outcome.as_dict(),
            },
            indent=2,
        ),
        "bisect.md": text,
        "bisect.html": html_page(outcome),
    }
    for name, content in files.items():
        (out_dir / name).write_text(content)
    return [out_dir / name for name in files]
