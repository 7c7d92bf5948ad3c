"""Running a container rehearsal (ci/rehearsal/run.sh) and reading what it showed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REHEARSAL = ROOT / "ci" / "rehearsal" / "run.sh"
# Every rehearsal: podman as root, and one xdist worker for them all (they share the cached
# image and stack folders).
CONTAINER_MARKS = [
    pytest.mark.skipif(os.geteuid() != 0, reason="podman here runs as root"),
    pytest.mark.skipif(shutil.which("podman") is None, reason="ci/rehearsal/setup.sh not run"),
    pytest.mark.xdist_group("gpu-job-rehearsal"),
]


def rehearse(checkout: Path, *options: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`ci/rehearsal/run.sh [OPTIONS] CHECKOUT`, its output kept."""
    return subprocess.run(
        ["bash", str(REHEARSAL), *options, str(checkout)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def not_shown(result: subprocess.CompletedProcess[str], expected: dict[str, str]) -> list[str]:
    """The names of the expected lines (name -> regular expression) the output lacks."""
    out = result.stdout + result.stderr
    return [what for what, pattern in expected.items() if not re.search(pattern, out)]
