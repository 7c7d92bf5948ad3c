"""Import a worker's start path in the worker's own interpreter and say what failed:
`python -m discovery_harness_workers.import_probe [--stand-ins] MODULE ...`.

The harness runs it once, before any worker starts, in the environment its workers get (a
release environment, a checkout over one): a module missing there is then one line up front
instead of every worker exiting at import. `--stand-ins`: the CPU tier's start-up sequence
first (the workers' stand-ins stand in for kernels a CPU machine lacks), else torchvision's
CPU shim only. Prints one line, `HARNESS-PROBE {json}`: the versions, where dynamo's modules
came from, and the first error (its type, message, missing module and the line raising it).
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import json
import sys
import traceback
from typing import Any

MARKER = "HARNESS-PROBE "
DISTRIBUTIONS = ("ai-dynamo", "ai-dynamo-runtime", "sglang")
ORIGINS = ("dynamo.sglang", "dynamo.frontend", "dynamo._core")
# What is being imported before the first named module: the stand-ins' own start-up.
START_UP = "the workers' start-up (their CPU stand-ins import sglang)"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _runtime_modules() -> list[str]:
    """The top-level dynamo modules the runtime wheel ships (a missing one is the runtime's)."""
    try:
        files = metadata.files("ai-dynamo-runtime") or []
    except metadata.PackageNotFoundError:
        files = []
    return sorted({
        "dynamo." + path.parts[1].split(".")[0]
        for path in files
        if len(path.parts) > 1 and path.parts[0] == "dynamo"
    })


def _prepare(stand_ins: bool) -> None:
    if stand_ins:
        from discovery_harness_workers import start

        start.prepare(with_fault=False)
        return
    try:
        from discovery_harness_workers import torchvision_shim

        torchvision_shim.apply()
    except ImportError:
        pass


def describe_error(failed: BaseException, importing: str) -> dict[str, Any]:
    """A failure at import as the harness reads it: type, message, missing module, the line."""
    frames = traceback.format_exception(failed)
    return {
        "type": type(failed).__name__,
        "message": str(failed),
        "module": getattr(failed, "name", None),
        "importing": importing,
        "where": frames[-2].strip().splitlines()[0] if len(frames) > 1 else "",
    }


def probe(modules: list[str], stand_ins: bool) -> dict[str, Any]:
    found: dict[str, Any] = {
        "versions": {dist: _version(dist) for dist in DISTRIBUTIONS},
        "runtime_modules": _runtime_modules(),
        "error": None,
    }
    importing = START_UP
    try:
        _prepare(stand_ins)
        for importing in modules:
            importlib.import_module(importing)
    except BaseException as failed:  # any failure at import is the answer
        found["error"] = describe_error(failed, importing)
    found["from"] = {
        name: getattr(sys.modules.get(name), "__file__", None)
        or str(list(getattr(sys.modules.get(name), "__path__", [])))
        for name in ORIGINS
    }
    return found


def main(argv: list[str]) -> None:
    stand_ins = "--stand-ins" in argv
    modules = [arg for arg in argv if arg != "--stand-ins"]
    print(MARKER + json.dumps(probe(modules, stand_ins)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
