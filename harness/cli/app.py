"""Command line of the harness.

python -m discovery_harness conformance [--topology NAME ...] [pytest args...]
python -m discovery_harness topologies [--gpu | --doc]
python -m discovery_harness plan [--tier gpu|cpu] [--gpus N] [--gpu-memory GIB] [--json] [--topology
NAME ... [--order ROLE,ROLE,...]]
python -m discovery_harness models list|fetch [TOPOLOGY ... | -m EXPR] [--dry-run] [--check]
[--model KEY=REF]
python -m discovery_harness preflight [--allow-no-gpu] [--writable LABEL=PATH ...]
python -m discovery_harness history [--releases 0.7.1,0.8.1,1.6.1|all] [-j N] [--rerun] [--topology
NAME ...]
python -m discovery_harness up TOPOLOGY [--inject-fault ROLE=FAULT] [--infra ...] [--env-file FILE]
python -m discovery_harness bisect --dynamo-src DIR OLD NEW (--topology NAME ... | -m EXPR)
python -m discovery_harness audit --etcd URL | --file-store DIR [--frontend URL] [--namespace NS]
[--probe]
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import NoReturn

from discovery_harness.audit import command as audit_command
from discovery_harness.bisect import command as bisect_command
from discovery_harness.cli import conformance, models
from discovery_harness.cli.tables import catalogue_doc, gpu_table, topologies_table
from discovery_harness.common import child
from discovery_harness.common.ctrl_c import take_ctrl_c
from discovery_harness.common.exits import USAGE_ERROR
from discovery_harness.model import catalogue as catalogue_module
from discovery_harness.runtime.tier import GPU, TIERS
from discovery_harness.up import command as up_command


class UsageParser(argparse.ArgumentParser):
    """Bad input is one line on stderr and exit 4 (pytest's usage-error code), no usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _check_plan(args: argparse.Namespace) -> None:
    """Options the chosen tier would ignore are refused, not dropped."""
    if args.gpus is not None and args.gpus < 1:
        raise ValueError(f"--gpus {args.gpus}: a GPU-tier plan needs at least 1 GPU")
    if not TIERS[args.tier].gpus and args.gpus is not None:
        raise ValueError("--gpus: the CPU tier runs each topology's packed layout on no GPU")
    if TIERS[args.tier].tiny_models and args.model:
        raise ValueError(f"--model {args.model[0]!r}: the CPU tier uses generated tiny models")
    if args.order and len(args.topology) != 1:
        raise ValueError("--order: name the one topology it orders with --topology")
    if args.gpus is None:
        args.gpus = 1


def _quiet_on_closed_pipe() -> None:
    """`plan | head`: a closed stdout ends a printing command quietly, as Unix tools do."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def _parser() -> argparse.ArgumentParser:
    parser = UsageParser(
        prog="python -m discovery_harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=UsageParser)
    conformance.register(commands)
    models.register(commands)
    topologies = commands.add_parser("topologies", help="print the contract table")
    shown = topologies.add_mutually_exclusive_group()
    shown.add_argument("--gpu", action="store_true", help="the GPU layouts instead")
    shown.add_argument(
        "--doc", action="store_true", help="docs/topologies.md, generated whole from the catalogue"
    )
    plan = commands.add_parser("plan", help="print every worker's command; start nothing")
    plan.add_argument("--tier", choices=list(TIERS), default=GPU.name)
    plan.add_argument(
        "--gpus", type=int, default=None, help="GPUs visible to the run (GPU tier; default 1)"
    )
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
    plan.add_argument(
        "--order",
        default=None,
        metavar="ROLE,ROLE,...",
        help="every role of the one --topology, started one at a time in this order, each "
        "registered before the next (a test's deploy(order=...))",
    )
    history = commands.add_parser(
        "history",
        help="run the conformance suite on several Dynamo releases; one table of what each did",
    )
    from discovery_harness.history.command import add_arguments as history_arguments

    history_arguments(history)
    commands.add_parser(
        "preflight",
        help="the GPU job's checks (image, driver, GPUs, versions, etcd/NATS)",
        add_help=False,
    )
    up_command.add_parser(commands)
    audit_command.add_parser(commands)
    bisect_command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    take_ctrl_c()  # the console script's first act too (docs: common/ctrl_c.py)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["preflight"]:  # its own options (standard library only)
        from discovery_harness.runtime.preflight import main as preflight

        return preflight(argv[1:])
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    positionals = getattr(args, "positionals_anywhere", None)  # `models list --check NAME`
    if positionals and extra and not any(e.startswith("-") for e in extra):
        getattr(args, positionals).extend(extra)
        extra = []
    if extra and not getattr(args, "takes_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "conformance":
            return args.run(args, extra)
        if args.command == "history":
            from discovery_harness.history.command import history_command

            with child.termination_as_ctrl_c():  # its children run in sessions of their own
                return history_command(args, catalogue_module.load())
        if args.command == "up":
            return up_command.up_command(args)
        if args.command == "bisect":
            with child.termination_as_ctrl_c():
                return bisect_command.bisect_command(args, catalogue_module.load())
        if args.command == "audit":
            return audit_command.audit_command(args)
        _quiet_on_closed_pipe()
        if args.command == "topologies":
            if args.doc:
                print(catalogue_doc(), end="")
            else:
                print(gpu_table() if args.gpu else topologies_table())
        elif args.command == "plan":
            from discovery_harness.cli.plan import plan_command

            _check_plan(args)
            print(plan_command(catalogue_module.load(), args))
        else:
            return args.run(args)
    except (KeyError, ValueError) as bad_input:  # unknown topology, bad --model
        parser.error(str(bad_input.args[0] if bad_input.args else bad_input))
    return 0


if __name__ == "__main__":
    sys.exit(main())
