"""Which Dynamo release a run drives: the harness's own environment, or another one.

The harness (pytest, observer, checks) always runs from its own environment. The Dynamo
processes it starts (frontend and workers) run with the interpreter of a *Dynamo environment*:
by default the harness's own (ai-dynamo 1.6.1), or, with `--dynamo-env PATH`, a release
environment built by `ci/setup.sh --dynamo VERSION`. The choice travels in HARNESS_DYNAMO_ENV,
so xdist workers and every module that starts a process see the same one.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ENV_VARIABLE = "HARNESS_DYNAMO_ENV"
_VERSION_PROBE = "import importlib.metadata as m; print(m.version('ai-dynamo'))"


@dataclass(frozen=True)
class DynamoEnv:
    python: str  # the interpreter that runs the frontend and the workers
    version: str  # its ai-dynamo release
    own: bool  # the harness's own environment (the worker template can serve it)

    def describe(self) -> str:
        where = "the harness's own environment" if self.own else self.python
        return f"ai-dynamo {self.version} ({where})"


class DynamoEnvError(ValueError):
    """A --dynamo-env that cannot run Dynamo: one usage error, before anything starts."""


def interpreter(path: str | Path) -> Path:
    """A venv directory or a python executable, as the interpreter path."""
    candidate = Path(path).expanduser().absolute()  # workers run elsewhere
    python = candidate / "bin" / "python" if candidate.is_dir() else candidate
    if not python.is_file():
        raise DynamoEnvError(
            f"--dynamo-env {path}: no python interpreter there; build a release environment "
            "with `bash ci/setup.sh --dynamo VERSION` and pass its folder (.venvs/dynamo-VERSION)"
        )
    return python


@functools.cache
def _probe(python: str) -> str:
    done = subprocess.run(
        [python, "-c", _VERSION_PROBE], capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise DynamoEnvError(f"--dynamo-env {python}: ai-dynamo is not installed there ({tail})")
    return done.stdout.strip()


def own() -> DynamoEnv:
    try:
        version = importlib.metadata.version("ai-dynamo")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return DynamoEnv(sys.executable, version, own=True)


def resolve(path: str | Path | None) -> DynamoEnv:
    """The Dynamo environment at `path` (None or the harness's own interpreter: its own)."""
    if not path:
        return own()
    python = interpreter(path)
    if python.absolute() == Path(sys.executable).absolute():
        return own()
    return DynamoEnv(str(python), _probe(str(python)), own=False)


def active() -> DynamoEnv:
    """The run's Dynamo environment (HARNESS_DYNAMO_ENV, else the harness's own)."""
    return resolve(os.environ.get(ENV_VARIABLE))


# Dynamo before PR #11878 (first in 1.6) reads DYN_TCP_RESPONSE_STREAM_HOST as a network
# interface name only: an IP there fails the frontend's model pipeline with "Interface not
# found: 127.0.0.1" (measured on 1.3.1). 0.x ignores the variable's value for its planes.
_HOST_AS_INTERFACE = ">=1.0,<1.6"


def response_stream_host(loopback_ip: str) -> str:
    """The active release's spelling of the loopback for DYN_TCP_RESPONSE_STREAM_HOST."""
    from packaging.specifiers import SpecifierSet

    version = active().version
    if version != "unknown" and SpecifierSet(_HOST_AS_INTERFACE).contains(version, True):
        return "lo"
    return loopback_ip
