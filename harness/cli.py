"""Command line: run the conformance suite and report, or print the contract catalogue.

python -m harness conformance [--infra auto|external|docker|process] [pytest args...]
python -m harness topologies
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORT_DIR = ROOT / "reports"


def topologies_table() -> str:
    from scenarios.catalogue import CATALOGUE

    header = (
        "topology",
        "worker",
        "flags",
        "component",
        "model_type",
        "input",
        "worker_type",
        "needs",
        "public",
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for topology in CATALOGUE:
        for worker in topology.workers:
            card = worker.card
            needs = " or ".join("+".join(g) for g in card.needs) or "-"
            flags = " ".join(worker.flags) or "(default)"
            cells = (
                topology.name,
                worker.role,
                f"`{flags}`",
                worker.component,
                card.model_type.replace("|", "\\|"),
                card.model_input,
                card.worker_type,
                needs,
                "yes" if card.public else "internal",
            )
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summarise(junit: Path) -> str:
    """One line per test from the JUnit report, with known violations and timelines."""
    root = ElementTree.parse(junit).getroot()
    lines = []
    for case in root.iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = {"failure": "FAILED", "error": "ERROR", "skipped": "skipped"}[tag]
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        known = [v for k, v in properties.items() if k == "known_violation"]
        extra = f"  (known: {'; '.join(known)})" if known else ""
        lines.append(f"{outcome:<8} {case.get('name')} {float(case.get('time', 0)):6.1f}s{extra}")
    return "\n".join(lines)


def conformance(args: list[str]) -> int:
    REPORT_DIR.mkdir(exist_ok=True)
    junit = REPORT_DIR / "conformance.xml"
    code = pytest.main(
        ["scenarios/test_topologies.py", f"--junitxml={junit}", "-o", "junit_logging=no", *args]
    )
    if junit.exists():
        print("\n=== conformance report ===")
        print(summarise(junit))
        print(f"(JUnit XML with per-worker timelines: {junit})")
    return int(code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=["conformance", "topologies"])
    known, rest = parser.parse_known_args(argv)
    if known.command == "topologies":
        print(topologies_table())
        return 0
    return conformance(rest)


if __name__ == "__main__":
    sys.exit(main())
