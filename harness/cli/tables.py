"""The catalogue as tables: each worker's contract, each topology's GPU layouts."""

from __future__ import annotations

from discovery_harness.common.markdown import row
from discovery_harness.model import catalogue as catalogue_module
from discovery_harness.model.catalogue import Catalogue
from discovery_harness.runtime.gpus import memory_needed_gib


def topologies_table(catalogue: Catalogue | None = None) -> str:
    """One row per worker: its start path, flags, the card it must register (or that it
    must not register at all) and its readiness contract (discovery_harness.judge.health)."""
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
        "/health",
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for topology in catalogue.topologies:
        for worker in topology.workers:
            health = worker.readiness or "not judged"
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
                    str(card.model_input),
                    card.worker_type,
                    needs,
                    "yes" if card.public else "internal",
                )
            cells = (
                topology.name,
                worker.role,
                start,
                f"`{flags}`",
                worker.component,
                *contract,
                health,
            )
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


def releases_table(catalogue: Catalogue | None = None) -> str:
    """Per topology and range of ai-dynamo releases: which deployment and contract it has."""
    catalogue = catalogue or catalogue_module.load()
    lines = ["| topology | ai-dynamo | deployment and contract |", "|---|---|---|"]
    for topology in catalogue.topologies:
        rows = [(topology.releases, "the workers and cards above")]
        for era in topology.eras:
            if era.unsupported:
                what = f"skipped: {era.unsupported}"
            elif era.workers:
                roles = ", ".join(
                    f"{w.role} ({w.card.model_type if w.card else 'no card'})" for w in era.workers
                )
                what = f"its own workers: {roles}"
            elif not era.topology_fields:
                what = "the same workers; cards without worker_type / needs"
            else:
                what = "the same workers and cards"
            if era.request_plane != "tcp":
                what += f"; requests over {era.request_plane.upper()}"
            if era.cpu_skip:
                what += f"; GPU-only ({era.cpu_skip})"
            rows.append((era.releases, what))
        lines += [row(topology.name, f"`{releases}`", what) for releases, what in rows]
    return "\n".join(lines)


def known_violations_table(catalogue: Catalogue | None = None) -> str:
    """Every violation a release is declared to show: reported, not failed."""
    catalogue = catalogue or catalogue_module.load()
    lines = [
        "| topology | violation | ai-dynamo | excused | why it is known | upstream |",
        "|---|---|---|---|---|---|",
    ]
    topologies = catalogue.topologies
    # One row for a release-wide violation every topology declares (the release's frontend).
    everywhere = [
        known
        for known in (topologies[0].known_violations if topologies else ())
        if all(known in topology.known_violations for topology in topologies)
    ]
    rows = [("every topology", known) for known in everywhere]
    rows += [
        (topology.name, known)
        for topology in topologies
        for known in topology.known_violations
        if known not in everywhere
    ]
    for name, known in rows:
        versions = ", ".join(known.dynamo_versions)
        window = known.window.describe() if known.window else "always"
        if known.shape is not None:  # a bad answer of one request shape only (or one gap)
            answers = " answers" if known.shape.endswith("]") else ""
            window = f"{known.shape}{answers}, {window}"
        cites = ", ".join(known.cites) or "-"
        lines.append(row(name, f"`{known.kind}`", versions, window, known.reason, cites))
    return "\n".join(lines)


DOC_COMMAND = "python -m discovery_harness topologies --doc > docs/topologies.md"


def catalogue_doc(catalogue: Catalogue | None = None) -> str:
    """docs/topologies.md, whole: generated from the catalogue (a test checks it is equal)."""
    catalogue = catalogue or catalogue_module.load()
    return "\n".join(
        [
            "# Topologies and their contracts",
            "",
            f"Generated from the catalogue by `{DOC_COMMAND}`; do not edit by hand (a test",
            "checks this file equals what the command prints).",
            "",
            "## What each worker must register",
            "",
            "Each worker is started with `--model-path`, `--served-model-name`, `--namespace`,",
            "`--disaggregation-bootstrap-port` (and `--device cpu` on the CPU tier) plus these",
            "flags. A worker that **must not register** fails the run if it writes any instance",
            "or card.",
            "",
            topologies_table(catalogue),
            "",
            "## GPU layouts",
            "",
            gpu_table(catalogue),
            "",
            "## Across Dynamo releases",
            "",
            releases_table(catalogue),
            "",
            "## Known violations (reported, not failed)",
            "",
            known_violations_table(catalogue),
            "",
        ]
    )
