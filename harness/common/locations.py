"""Where the harness's own files are: found through the installed packages, never the checkout.

Installed from the wheel, `discovery_harness_workers`, `discovery_harness_scenarios` and the
CI files the commands need (`discovery_harness.ci`: ci/setup.sh and ci/requirements/) are
folders in site-packages; installed editable they are the checkout's workers/, scenarios/ and
ci/. Either way the import system says where they are, so no module counts parent folders.

A worker may run under an interpreter that is not the harness's (a release environment of
`--dynamo-env`): it must import the workers package and nothing else of the harness's
environment. `worker_import_root` is a folder that holds only that package (a link to it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from functools import cache
from pathlib import Path

WORKERS_PACKAGE = "discovery_harness_workers"
SCENARIOS_PACKAGE = "discovery_harness_scenarios"
CI_PACKAGE = "discovery_harness.ci"
CONFORMANCE_MODULE = "test_topologies"


def package_dir(name: str) -> Path:
    """The folder of an installed package (a regular or a namespace package)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{name} is not installed (pip install the harness)")
    return Path(next(iter(spec.submodule_search_locations)))


def workers_dir() -> Path:
    return package_dir(WORKERS_PACKAGE)


def startup_hook_dir() -> Path:
    """The folder of the CPU-tier workers' start-up hook (its sitecustomize)."""
    return workers_dir() / "startup"


def ci_dir() -> Path:
    """ci/: setup.sh and requirements/ (what `history` and `preflight` read)."""
    return package_dir(CI_PACKAGE)


def requirements_dir() -> Path:
    return ci_dir() / "requirements"


def conformance_tests() -> Path:
    """The conformance suite's test file, wherever the scenarios are installed."""
    return package_dir(SCENARIOS_PACKAGE) / f"{CONFORMANCE_MODULE}.py"


@cache
def worker_import_root() -> Path:
    """A folder holding only a link to the workers package, for a worker's PYTHONPATH.

    One per user and package location, under the system's temp folder; made once, atomically
    (parallel sessions may race to make it), and reused."""
    target = workers_dir().resolve()
    digest = hashlib.sha256(str(target).encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / f"discovery-harness-{os.getuid()}" / digest
    link = root / WORKERS_PACKAGE
    if link.is_symlink() and link.resolve() == target:
        return root
    root.mkdir(parents=True, exist_ok=True)
    draft = root / f".{WORKERS_PACKAGE}.{os.getpid()}"
    draft.unlink(missing_ok=True)
    draft.symlink_to(target, target_is_directory=True)
    os.replace(draft, link)
    return root
