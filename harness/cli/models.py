"""`python -m discovery_harness models list|fetch`: the GPU tier's models, where each is, and
fetching
them into the Hugging Face cache before a run (which never downloads)."""

from __future__ import annotations

import argparse

from discovery_harness.model import catalogue as catalogue_module
from discovery_harness.runtime.model_source import gpu_needs


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "models",
        help="GPU-tier models: list where each is, or fetch them into the HF cache",
        description="list: each model a GPU-tier topology needs, who needs it and whether it "
        "is available (exit 0; --check: exit 1 when one is missing). fetch: download the "
        "missing ones (HF_TOKEN honoured); exit 1 when one is still missing.",
    )
    parser.add_argument("action", choices=["list", "fetch"])
    parser.add_argument("topology", nargs="*", help="default: every topology")
    parser.add_argument("--model", action="append", default=[], metavar="KEY=REF")
    parser.add_argument("--check", action="store_true", help="list: exit 1 when a model is missing")
    parser.add_argument(
        "-m",
        dest="marks",
        default=None,
        metavar="EXPR",
        help="exactly the models of the GPU-tier scenarios this marker expression selects "
        "(pytest's own -m) that fit this machine's GPUs, with sizes",
    )
    parser.add_argument("--gpus", type=int, default=None, help="with -m: GPUs (default: visible)")
    parser.add_argument("--gpu-memory", type=float, default=None, metavar="GIB")
    parser.add_argument(
        "--dry-run", action="store_true", help="fetch: list what would be fetched, with sizes"
    )
    parser.set_defaults(run=run, positionals_anywhere="topology")


def run(args: argparse.Namespace) -> int:
    """One listing whatever the options (discovery_harness.runtime.model_fetch.print_listing): plain
    `list` shows the catalogue's size estimates (no network); -m and fetch ask the Hub."""
    from discovery_harness.runtime.model_fetch import models_command, print_listing

    catalogue = catalogue_module.load()
    if args.marks is not None or args.action == "fetch":  # a run's selection, sizes, fetching
        return models_command(catalogue, args)
    needs = gpu_needs(catalogue, args.topology or None, args.model)
    missing = print_listing(needs, catalogue, ask_hub=False)
    return 1 if args.check and missing else 0
