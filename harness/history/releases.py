"""Which Dynamo releases the history can run, and their environments, built on demand.

A release is runnable when the project has its requirements
(`ci/requirements/releases/VERSION/`) or it is the harness's own. Its environment
(`.venvs/dynamo-VERSION`) is built by `ci/setup.sh --dynamo VERSION` the first time a history
run needs it, its progress lines passed through with the release's name in front.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from packaging.version import Version

from discovery_harness.common import locations
from discovery_harness.runtime import dynamo_env


class UnknownRelease(ValueError):
    """A release the project has no requirements for: a usage error, before anything runs."""


def known(requirements: Path | None = None) -> list[str]:
    """Every release the history can run, oldest first."""
    requirements = requirements or locations.requirements_dir() / "releases"
    found = {p.name for p in requirements.iterdir() if (p / "runtime.txt").is_file()}
    found.add(dynamo_env.own().version)
    return sorted(found, key=Version)


def parse(text: str, requirements: Path | None = None) -> list[str]:
    """`--releases` as a list, oldest first ("all": every known one); UnknownRelease names
    the ones there are."""
    if text.strip() == "all":
        return known(requirements)
    wanted = [r.strip() for r in text.split(",") if r.strip()]
    if not wanted:
        raise UnknownRelease("--releases: no release given")
    runnable = known(requirements)
    unknown = [r for r in wanted if r not in runnable]
    if unknown:
        raise UnknownRelease(
            f"--releases: no requirements for ai-dynamo {', '.join(unknown)} "
            f"(known: {', '.join(runnable)}; see docs/history.md 'Adding a release')"
        )
    return sorted(dict.fromkeys(wanted), key=Version)


def ordered(releases: Iterable[str]) -> list[str]:
    return sorted(releases, key=Version)


def build(release: str, say: Callable[[str], None], target: Path) -> None:
    """`ci/setup.sh --dynamo RELEASE` into target (a no-op when built), each progress line
    through say. The script and its requirements are the installed package's."""
    with subprocess.Popen(
        ["bash", str(locations.ci_dir() / "setup.sh"), "--dynamo", release],
        env={**os.environ, "HARNESS_VENV": str(target)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as setup:
        assert setup.stdout is not None
        tail: list[str] = []
        for line in setup.stdout:
            tail = [*tail[-20:], line.rstrip()]
            if line.startswith("[setup"):
                say(line.rstrip())
    if setup.returncode != 0:
        raise dynamo_env.DynamoEnvError(
            f"ci/setup.sh --dynamo {release} failed ({setup.returncode}): " + " | ".join(tail[-3:])
        )
