"""Command line of the harness.

python -m harness conformance [--infra auto|external|docker|process] [pytest args...]
python -m harness topologies [--gpu]
python -m harness plan [--tier gpu|cpu] [--gpus N] [--gpu-memory GIB] [--json] [--topology NAME ...]
python -m harness models list|fetch [TOPOLOGY ... | -m EXPR] [--dry-run] [--model KEY=REF]
python -m harness preflight [--allow-no-gpu] [--writable LABEL=PATH ...]
python -m harness history [--releases 0.7.1,0.8.1,1.6.1] [--topology NAME ...] [--out DIR]
python -m harness up TOPOLOGY [--inject-fault ROLE=FAULT] [--infra ...] [--env-file FILE]
python -m harness audit --etcd URL | --file-store DIR [--frontend URL] [--namespace NS] [--probe]
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from harness import catalogue as catalogue_module
from harness.audit import command as audit_command
from harness.catalogue import Catalogue
from harness.history.run import CONFORMANCE_TESTS, outcome
from harness.runtime.gpus import memory_needed_gib
from harness.runtime.tier import GPU, TIERS
from harness.up import command as up_command

ROOT = Path(__file__).resolve().parent.parent


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
        "VRAM per GPU",
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
            needed = memory_needed_gib(layout)
            vram = " / ".join(f"~{gib:.1f}" for _, gib in sorted(needed.items())) + " GiB"
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

    from harness.report import default_report_dir, remove_reports

    reports = default_report_dir()
    reports.mkdir(parents=True, exist_ok=True)
    junit = reports / "conformance.xml"
    if not {"-h", "--help", "--version"} & set(args):  # those are not runs: nothing touched
        junit.unlink(missing_ok=True)
        remove_reports(reports)  # even pytest's own usage errors leave no older report
    code = pytest.main([CONFORMANCE_TESTS, f"--junitxml={junit}", "-o", "junit_logging=no", *args])
    if junit.exists():
        print("\n=== conformance report ===")
        print(summarise(junit))
        print(f"(JUnit XML with per-worker timelines: {junit})")
    if (reports / "report.html").exists():
        print(f"(report.json, report.md, report.html: {reports})")
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
    plan.add_argument("--tier", choices=list(TIERS), default=GPU.name)
    plan.add_argument("--gpus", type=int, default=1, help="GPUs visible to the run (GPU tier)")
    plan.add_argument(
        "--gpu-memory",
        type=float,
        default=None,
        metavar="GIB",
        help="each GPU's total memory: layouts that do not fit are left out with the reason "
        "(default: what nvidia-smi reports here, else no memory check)",
    )
    plan.add_argument(
        "--json", action="store_true", help="the workers, and the layouts left out with why"
    )
    plan.add_argument("--topology", action="append", default=[], metavar="NAME")
    plan.add_argument("--model", action="append", default=[], metavar="KEY=REF")
    history = commands.add_parser(
        "history",
        help="run the conformance suite on several Dynamo releases; one table of what each did",
    )
    history.add_argument(
        "--releases",
        default="0.7.1,0.8.1,1.6.1",
        help="comma list of ai-dynamo versions (each but the harness's own needs "
        "`bash ci/setup.sh --dynamo VERSION` first)",
    )
    history.add_argument("--topology", action="append", default=[], metavar="NAME")
    history.add_argument("--envs-dir", default=None, help="where the release environments are")
    history.add_argument("--out", default=None, help="folder for the table (default reports/)")
    models = commands.add_parser(
        "models", help="GPU-tier models: list where each is, or fetch them into the HF cache"
    )
    models.add_argument("action", choices=["list", "fetch"])
    models.add_argument("topology", nargs="*", help="default: every topology")
    models.add_argument("--model", action="append", default=[], metavar="KEY=REF")
    models.add_argument(
        "-m",
        dest="marks",
        default=None,
        metavar="EXPR",
        help="exactly the models of the GPU-tier scenarios this marker expression selects "
        "(pytest's own -m) that fit this machine's GPUs",
    )
    models.add_argument("--gpus", type=int, default=None, help="with -m: GPUs (default: visible)")
    models.add_argument("--gpu-memory", type=float, default=None, metavar="GIB")
    models.add_argument(
        "--dry-run", action="store_true", help="list what would be fetched, with sizes"
    )
    commands.add_parser(
        "preflight",
        help="the GPU job's checks (image, driver, GPUs, versions, etcd/NATS)",
        add_help=False,
    )
    up_command.add_parser(commands)
    audit_command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["conformance"]:  # everything after it belongs to pytest
        return conformance(argv[1:])
    if argv[:1] == ["preflight"]:  # its own options (standard library only)
        from harness.runtime.preflight import main as preflight

        return preflight(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "topologies":
            print(gpu_table() if args.gpu else topologies_table())
        elif args.command == "plan":
            from harness.runtime.plan import plan_command

            print(plan_command(catalogue_module.load(), args))
        elif args.command == "models":
            from harness.runtime.model_fetch import models_command

            return models_command(catalogue_module.load(), args)
        elif args.command == "up":
            return up_command.up_command(args)
        elif args.command == "audit":
            return audit_command.audit_command(args)
        elif args.command == "history":
            from harness.history.command import history_command

            return history_command(args, catalogue_module.load())
    except (KeyError, ValueError) as bad_input:  # unknown topology, bad --model
        parser.error(str(bad_input.args[0] if bad_input.args else bad_input))
    return 0


if __name__ == "__main__":
    sys.exit(main())
