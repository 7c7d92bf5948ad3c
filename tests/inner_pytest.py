"""A pytest session run as a subprocess from the project root: how the harness's own tests
check what a user running pytest sees (exit status, terminal output, usage errors)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from discovery_harness.common import locations
from discovery_harness.runtime import gpus

ROOT = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
HARNESS = [sys.executable, "-m", "discovery_harness"]
# One GPU the GPU probe takes as usable, on a machine without one: the GPU tier's own checks
# and selection, run here (nothing of it starts a worker).
ONE_GPU = {
    "CUDA_VISIBLE_DEVICES": "0",
    "HARNESS_CUDA_INIT": '{"torch": "2.13.0", "cuda": "13.0", "count": 1, "error": null}',
}


def session_env(**extra: str) -> dict[str, str]:
    """This process's environment for an inner session, plus `extra`."""
    # Its reports go to a folder of its own, never over the outer run's reports/.
    reports = {"HARNESS_REPORT_DIR": tempfile.mkdtemp(prefix="inner-reports-")}
    return {**gpus.session_of_its_own(), **reports, **extra}


def run_child(
    argv: list[str],
    env: dict[str, str] | None = None,
    timeout: float = 300,
    cwd: Path = ROOT,
    whole_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The tests' one way to run a child python: from `cwd`, in an inner session's
    environment plus `env` (or exactly `whole_env`), its output captured."""
    return subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=whole_env if whole_env is not None else session_env(**(env or {})),
    )


def run_pytest(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return run_child([*PYTEST, *args], env, timeout)


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    whole_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m discovery_harness ARGS` from the project root, as a user runs it."""
    return run_child(HARNESS + list(args), env, timeout, whole_env=whole_env)


def cli_in_process(
    capsys: pytest.CaptureFixture[str], *args: str
) -> subprocess.CompletedProcess[str]:
    """`python -m discovery_harness ARGS` run by its `main` in this process: its exit status
    (returned, or argparse's exit) and what it printed."""
    from discovery_harness.cli.app import main as cli_main  # the whole CLI: only when asked

    pipe = signal.getsignal(signal.SIGPIPE)  # plan and topologies reset it
    try:
        code = cli_main(list(args))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        signal.signal(signal.SIGPIPE, pipe)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def run_drift(python: Path | str) -> subprocess.CompletedProcess[str]:
    """The stand-ins' drift check in another environment's interpreter (only the workers
    package of the harness's on its path)."""
    return run_child(
        [str(python), "-m", "discovery_harness_workers.drift"],
        whole_env={**os.environ, "PYTHONPATH": str(locations.worker_import_root())},
    )
