"""Flake budget: the CPU-tier matrix run N times in a row, each failure with its violations.

    .venv/bin/python -m bench.flakes [--runs 10] [pytest args, default: the topology matrix]

Each run is a whole pytest session (its own etcd, NATS, frontend and worker template), so a
failure that depends on start-up order or timing has N chances to show. Prints one line per
run and a summary: passes, failures, and each failed test with the violation kinds it raised.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ARGS = ["scenarios/test_topologies.py"]
_KIND = re.compile(r"\[([a-z0-9-]+)\] ")


def failures(junit: Path) -> list[tuple[str, list[str]]]:
    """(test id, violation kinds or the error's first line) for every failed test."""
    found = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        for tag in ("failure", "error"):
            node = case.find(tag)
            if node is None:
                continue
            text = (node.get("message") or "") + "\n" + (node.text or "")
            kinds = sorted(set(_KIND.findall(text))) or [text.strip().splitlines()[0][:120]]
            found.append((f"{case.get('classname')}::{case.get('name')}", kinds))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args, pytest_args = parser.parse_known_args()
    pytest_args = pytest_args or DEFAULT_ARGS
    tally: Counter[str] = Counter()
    failed_runs = 0
    with tempfile.TemporaryDirectory(prefix="flakes-") as scratch:
        for run in range(1, args.runs + 1):
            junit = Path(scratch) / f"run-{run}.xml"
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
                    *pytest_args,
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            seconds = time.monotonic() - started
            tail = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "?"
            found = failures(junit) if junit.exists() else [("(no report)", [tail])]
            if result.returncode != 0:
                failed_runs += 1
            for test, kinds in found:
                tally[f"{test}: {', '.join(kinds)}"] += 1
            print(f"run {run:>3}: exit {result.returncode}, {seconds:5.0f} s, {tail}", flush=True)
    print(
        f"\n{args.runs} runs of {' '.join(pytest_args)}: "
        f"{args.runs - failed_runs} passed, {failed_runs} failed"
    )
    for failure, count in tally.most_common():
        print(f"  {count}x {failure}")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
