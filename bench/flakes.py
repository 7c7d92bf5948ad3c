"""Flake budget: whole pytest sessions run N times in a row, each failure with its violations.

    .venv/bin/python -m bench.flakes [--suites canary-matrix:20,readme:10] [--write]
    .venv/bin/python -m bench.flakes --runs 10 [pytest args]

Each run is a whole pytest session (its own etcd, NATS, frontend and worker template), so a
failure that depends on start-up order or timing has N chances to show. The named suites are
the ones the no-false-alarm budget is held to: `canary-matrix`, the topology matrix (each
verdict proving every worker's canary) with the nightly ones as CI runs them (under `-n 2`),
and `readme`, the README's test command as the README gives it. Prints one line per run and a
summary per suite: passes, failures, each failed test with the violation kinds it raised and
the first lines of its message; the JUnit files of failed runs are kept (their folder is
printed) so each failure can be traced to its cause. `--write` puts the figures in bench/RESULTS.md
(its own section).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.readme_command import readme_test_args
from bench.results import Results

ROOT = Path(__file__).resolve().parent.parent
SUITES: dict[str, list[str]] = {
    "canary-matrix": [
        "-n",
        "2",
        "-m",
        "e2e or nightly",
        "scenarios/test_topologies.py",
    ],
    "readme": readme_test_args(ROOT),
}
DEFAULT_SUITES = "canary-matrix:20,readme:10"
_KIND = re.compile(r"\[([a-z0-9-]+)\] ")
_SUMMARY = re.compile(r"=+ (.*) in [\d.]+s")
MESSAGE_LINES = 4


@dataclass
class Failure:
    test: str
    kinds: list[str]
    head: str  # the first lines of its message: where tracing the cause starts

    @property
    def label(self) -> str:
        return f"{self.test}: {', '.join(self.kinds)}"


@dataclass
class Tally:
    name: str
    args: list[str]
    runs: int = 0
    failed: int = 0
    seconds: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    first_seen: dict[str, str] = field(default_factory=dict)


def failures(junit: Path) -> list[Failure]:
    """Every failed test: its id, its violation kinds (else the error's first line) and the
    first lines of its message."""
    found = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        for tag in ("failure", "error"):
            node = case.find(tag)
            if node is None:
                continue
            text = (node.get("message") or "") + "\n" + (node.text or "")
            lines = [line for line in text.strip().splitlines() if line.strip()]
            kinds = sorted(set(_KIND.findall(text))) or [lines[0][:120] if lines else tag]
            test = f"{case.get('classname')}::{case.get('name')}"
            found.append(Failure(test, kinds, "\n".join(lines[:MESSAGE_LINES])))
    return found


def run_once(args: list[str], junit: Path) -> tuple[int, float, str, list[Failure]]:
    """One whole pytest session: exit code, seconds, its closing line, its failures."""
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    seconds = time.monotonic() - started
    closing = [m.group(1) for m in _SUMMARY.finditer(result.stdout)]
    tail = closing[-1] if closing else (result.stdout.strip().splitlines() or ["?"])[-1]
    found = failures(junit) if junit.exists() else [Failure("(no report)", [tail], tail)]
    if result.returncode != 0 and not found:
        found = [Failure("(session)", [f"exit {result.returncode}"], tail)]
    return result.returncode, seconds, tail, found


def run_suite(tally: Tally, count: int, kept: Path, say) -> None:
    with tempfile.TemporaryDirectory(prefix="flakes-") as scratch:
        for run in range(1, count + 1):
            junit = Path(scratch) / f"{tally.name}-{run}.xml"
            code, seconds, tail, found = run_once(tally.args, junit)
            tally.runs += 1
            tally.seconds.append(seconds)
            if code != 0:
                tally.failed += 1
                if junit.exists():
                    shutil.copy(junit, kept / junit.name)
            for failure in found:
                tally.failures[failure.label] += 1
                tally.first_seen.setdefault(failure.label, failure.head)
            say(f"{tally.name} run {run:>3}: exit {code}, {seconds:5.0f} s, {tail}")


def report(results: Results, tallies: list[Tally], kept: Path) -> None:
    results.say("")
    results.table(("suite", "command", "runs", "passed", "failed", "median wall", "max wall"))
    for tally in tallies:
        ordered = sorted(tally.seconds)
        results.row(
            tally.name,
            f"`pytest {' '.join(_quoted(a) for a in tally.args)}`",
            str(tally.runs),
            str(tally.runs - tally.failed),
            str(tally.failed),
            f"{ordered[len(ordered) // 2]:.0f} s" if ordered else "-",
            f"{ordered[-1]:.0f} s" if ordered else "-",
        )
    for tally in tallies:
        for label, count in tally.failures.most_common():
            results.say("")
            results.say(f"- {tally.name}: {count}x {label}")
            results.say("")
            results.say("  ```")
            results.say("\n".join(f"  {line}" for line in tally.first_seen[label].splitlines()))
            results.say("  ```")
    if any(t.failed for t in tallies):
        results.say(f"\nJUnit files of the failed runs: {kept}")


def _quoted(arg: str) -> str:
    return f'"{arg}"' if " " in arg else arg


def _parse_suites(text: str, parser: argparse.ArgumentParser) -> list[tuple[str, int]]:
    """NAME:RUNS,... into (suite, runs); a bad name or count is a usage error."""
    chosen = []
    for item in text.split(","):
        name, _, count = item.partition(":")
        if name not in SUITES:
            parser.error(f"unknown suite {name!r}: one of {', '.join(SUITES)}")
        if count and not (count.isdigit() and int(count) > 0):
            parser.error(f"suite {name!r}: runs must be a whole number above 0, not {count!r}")
        chosen.append((name, int(count or 10)))
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", default=None, help=f"NAME:RUNS,... (default {DEFAULT_SUITES})")
    parser.add_argument("--runs", type=int, default=None, help="runs of the pytest args given")
    parser.add_argument("--write", action="store_true", help="figures into bench/RESULTS.md")
    args, pytest_args = parser.parse_known_args()
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be above 0")
    if pytest_args:
        if args.suites:
            parser.error("--suites or pytest arguments, not both")
        plan = [("given", args.runs or 10)]
        SUITES["given"] = pytest_args
    elif args.runs is not None:
        parser.error("--runs counts runs of the pytest arguments given after it; none given")
    else:
        plan = _parse_suites(args.suites or DEFAULT_SUITES, parser)
    kept = Path(tempfile.mkdtemp(prefix="flakes-failed-"))
    results = Results("Flake budget: whole sessions in a row, every failure traced")
    tallies = []
    for name, count in plan:
        tally = Tally(name, SUITES[name])
        tallies.append(tally)
        run_suite(tally, count, kept, results.say)
    report(results, tallies, kept)
    if args.write:
        results.say(f"\nCommit: {_commit()}")
        results.write(section="flakes")
    return 1 if any(t.failed for t in tallies) else 0


def _commit() -> str:
    """The checkout's commit (and whether its tree had changes), so a figure names its code."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{head or 'unknown'}{' with uncommitted changes' if dirty else ''}"


if __name__ == "__main__":
    sys.exit(main())
