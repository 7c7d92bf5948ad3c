"""Command line of the harness.

python -m harness conformance [--infra auto|external|docker|process] [pytest args...]
python -m harness topologies [--gpu]
python -m harness plan [--tier gpu|cpu] [--gpus N] [--json] [--topology NAME ...] [--model KEY=REF]
python -m harness models list|fetch [TOPOLOGY ...] [--model KEY=REF]
python -m harness history [--releases 0.7.1,0.8.1,1.6.1] [-j N] [--rerun] [--topology NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from harness import catalogue as catalogue_module
from harness.catalogue import Catalogue
from harness.history.run import CONFORMANCE_TESTS, outcome

ROOT = Path(__file__).resolve().parent.parent
REPORT_DIR = ROOT / "reports"


def topologies_table(catalogue: Catalogue | None = None) -> str:
    """One row per worker: its start path, flags and the card it must register (or that it
    must not register at all)."""
    catalogue = catalogue or catalogue_module.load()
    header = (
        "topology",
        "worker",
        "start path",
        "flags",
        "component",
        "model_type",
        "input",
        "worker_type",
        "needs",
        "public",
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for topology in catalogue.topologies:
        for worker in topology.workers:
            flags = " ".join(worker.flags) or "(default)"
            start = ", ".join(worker.start_paths)
            card = worker.card
            if card is None:
                contract: tuple[str, ...] = ("**must not register**", "-", "-", "-", "no")
            else:
                needs = " or ".join("+".join(g) for g in card.needs) or "-"
                count = f" (x{worker.registrants} processes)" if worker.registrants != 1 else ""
                contract = (
                    card.model_type.replace("|", "\\|") + count,
                    card.model_input,
                    card.worker_type,
                    needs,
                    "yes" if card.public else "internal",
                )
            cells = (topology.name, worker.role, start, f"`{flags}`", worker.component, *contract)
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def gpu_table(catalogue: Catalogue | None = None) -> str:
    """Per topology and layout: models, GPUs, VRAM estimate, start order and timeout."""
    catalogue = catalogue or catalogue_module.load()
    header = (
        "topology",
        "layout",
        "marker",
        "workers → GPU",
        "VRAM est.",
        "start order",
        "start timeout",
        "models",
        "GPU tier",
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for topology in catalogue.topologies:
        keys = sorted({w.model for w in topology.workers})
        models = ", ".join(f"{k}: {catalogue.gpu_models.get(k, '?')}" for k in keys)
        for layout in topology.gpu.placements:
            placed = ", ".join(f"{w.role}→{w.gpu}" for w in layout.workers)
            known = [w.vram_gib for w in layout.workers if w.vram_gib]
            vram = (
                f"~{sum(known):.1f} GiB"
                if len(known) == len(layout.workers)
                else "per GPU: all free"
            )
            cells = (
                topology.name,
                layout.name,
                f"gpu_{layout.gpus}",
                placed,
                vram,
                " → ".join(layout.start_order) or "together",
                f"{layout.start_timeout_s} s",
                models,
                "nightly" if topology.gpu.nightly else "every run",
            )
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summarise(junit: Path) -> str:
    """One line per test from the JUnit report, with known violations and timelines."""
    root = ElementTree.parse(junit).getroot()
    lines = []
    for case in root.iter("testcase"):
        found, _ = outcome(case)
        shown = {"failed": "FAILED", "error": "ERROR"}.get(found, found)
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        known = [v for k, v in properties.items() if k == "known_violation"]
        extra = f"  (known: {'; '.join(known)})" if known else ""
        lines.append(f"{shown:<8} {case.get('name')} {float(case.get('time', 0)):6.1f}s{extra}")
    return "\n".join(lines)


def conformance(args: list[str]) -> int:
    import pytest

    REPORT_DIR.mkdir(exist_ok=True)
    junit = REPORT_DIR / "conformance.xml"
    code = pytest.main([CONFORMANCE_TESTS, f"--junitxml={junit}", "-o", "junit_logging=no", *args])
    if junit.exists():
        print("\n=== conformance report ===")
        print(summarise(junit))
        print(f"(JUnit XML with per-worker timelines: {junit})")
    return int(code)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "conformance", help="run the conformance suite (other arguments go to pytest)"
    )
    topologies = commands.add_parser("topologies", help="print the contract table")
    topologies.add_argument("--gpu", action="store_true", help="the GPU layouts instead")
    plan = commands.add_parser("plan", help="print every worker's command; start nothing")
    plan.add_argument("--tier", choices=["cpu", "gpu"], default="gpu")
    plan.add_argument("--gpus", type=int, default=1, help="GPUs visible to the run (GPU tier)")
    plan.add_argument("--json", action="store_true", help="one object per worker")
    plan.add_argument("--topology", action="append", default=[], metavar="NAME")
    plan.add_argument("--model", action="append", default=[], metavar="KEY=REF")
    history = commands.add_parser(
        "history",
        help="run the conformance suite on several Dynamo releases; one table of what each did",
    )
    from harness.history.command import add_arguments as history_arguments

    history_arguments(history)
    models = commands.add_parser(
        "models", help="GPU-tier models: list where each is, or fetch them into the HF cache"
    )
    models.add_argument("action", choices=["list", "fetch"])
    models.add_argument("topology", nargs="*", help="default: every topology")
    models.add_argument("--model", action="append", default=[], metavar="KEY=REF")
    return parser


def models_command(args: argparse.Namespace) -> int:
    """`models list`: each GPU-tier model, who needs it and where it is; `models fetch`:
    download the missing ones (HF_TOKEN honoured), then check that every one is there."""
    from harness.model_source import gpu_needs
    from harness.runtime.models import MissingModels, fetch, hf_hub_cache, locate, require

    needs = gpu_needs(catalogue_module.load(), args.topology or None, args.model)
    if args.action == "fetch":
        fetch(needs)
    else:
        print(f"Hugging Face cache: {hf_hub_cache()}")
        for need in needs:
            where = locate(need.ref)
            print(f"{need.describe()} -> {where or 'NOT available'}")
    try:
        require(needs)
    except MissingModels as missing:
        print(missing, file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["conformance"]:  # everything after it belongs to pytest
        return conformance(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "topologies":
            print(gpu_table() if args.gpu else topologies_table())
        elif args.command == "plan":
            from harness.runtime.plan import plan_command

            print(plan_command(catalogue_module.load(), args))
        elif args.command == "models":
            return models_command(args)
        elif args.command == "history":
            from harness.history.command import history_command

            return history_command(args, catalogue_module.load())
    except (KeyError, ValueError) as bad_input:  # unknown topology, bad --model
        parser.error(str(bad_input.args[0] if bad_input.args else bad_input))
    return 0


if __name__ == "__main__":
    sys.exit(main())
