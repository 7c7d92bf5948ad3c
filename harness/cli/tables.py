"""The catalogue as tables: each worker's contract, each topology's GPU layouts."""

from __future__ import annotations

from harness.model import catalogue as catalogue_module
from harness.model.catalogue import Catalogue
from harness.runtime.gpus import memory_needed_gib


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
