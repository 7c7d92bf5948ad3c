"""A Dynamo checkout's Python over an installed runtime: `--dynamo-src DIR`.

`dynamo` is a namespace package split over two wheels (no `dynamo/__init__.py` in either):
`ai-dynamo-runtime` (`dynamo._core`, `dynamo.llm`, `dynamo.runtime`, ...) and `ai-dynamo`
(`dynamo.sglang`, `dynamo.frontend`, `dynamo.common`, ...). A path entry ahead of
site-packages holding DIR's `components/src` therefore wins for every `dynamo.X` the checkout
has and falls through to the installed wheels for the rest: the frontend and every worker
(fresh or forked from the template, which pre-imports from the same path) run the checkout's
work tree as it is over the runtime and sglang of a release environment. Nothing installed is
touched. The choice travels in HARNESS_DYNAMO_SRC, as --dynamo-env's does in
HARNESS_DYNAMO_ENV.

Which release environment fits the checkout, and the import probe that refuses a pair that
cannot run: discovery_harness.runtime.dynamo_fit. A misfit that shows only at run time (a
keyword the runtime rejects at registration) is read from the worker's log here.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from discovery_harness.runtime import dynamo_env

ENV_VARIABLE = "HARNESS_DYNAMO_SRC"
SRC = Path("components") / "src"
MISFIT = "checkout and runtime do not fit"


class CheckoutError(ValueError):
    """--dynamo-src names no Dynamo checkout: one usage error, before anything starts."""


class Misfit(ValueError):
    """The checkout's Python needs what the chosen runtime (or sglang) does not have."""


@dataclass(frozen=True)
class Checkout:
    root: Path
    version: str | None  # the root pyproject's version
    sglang_pin: str | None  # its `sglang` extra's pin (==X)
    commit: str | None  # HEAD's hash (None: not a git work tree)
    subject: str | None
    dirty: bool | None  # uncommitted changes under components/src or pyproject.toml

    @property
    def src(self) -> Path:
        return self.root / SRC

    def state(self) -> str:
        if self.commit is None:
            return "not a git work tree"
        return "dirty (uncommitted changes run as they are)" if self.dirty else "clean"

    def describe(self) -> str:
        commit = f"commit {self.commit[:12]} {self.subject!r}" if self.commit else "no commit"
        pins = f"ai-dynamo {self.version or '?'}, sglang {self.sglang_pin or '?'}"
        return f"{self.root} ({commit}, {self.state()}; pyproject: {pins})"

    def as_dict(self) -> dict[str, object]:
        return {
            "path": str(self.root),
            "commit": self.commit,
            "subject": self.subject,
            "dirty": self.dirty,
            "version": self.version,
            "sglang_pin": self.sglang_pin,
        }


def _git(root: Path, *args: str) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


def _pyproject(root: Path) -> tuple[str | None, str | None]:
    path = root / "pyproject.toml"
    if not path.is_file():
        return None, None
    try:
        project = tomllib.loads(path.read_text()).get("project", {})
    except tomllib.TOMLDecodeError:
        return None, None
    pin = None
    for requirement in project.get("optional-dependencies", {}).get("sglang", []):
        try:
            parsed = Requirement(requirement)
        except InvalidRequirement:
            continue
        pinned = [s.version for s in parsed.specifier if s.operator == "=="]
        if parsed.name == "sglang" and pinned:
            pin = pinned[0]
    return project.get("version"), pin


def read(path: str | Path) -> Checkout:
    """The checkout at `path`: its pyproject's pins and its git state."""
    root = Path(path).expanduser().absolute()
    if not (root / SRC / "dynamo").is_dir():
        raise CheckoutError(
            f"--dynamo-src {path}: no {SRC / 'dynamo'} there; give the root of a Dynamo "
            "checkout (the folder holding components/ and pyproject.toml)"
        )
    version, pin = _pyproject(root)
    commit = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    subject = _git(root, "log", "-1", "--format=%s") if commit else None
    status = _git(root, "status", "--porcelain", "--", str(SRC), "pyproject.toml") or ""
    # Python's own bytecode caches (written by the run itself) are not a change
    changes = [line for line in status.splitlines() if "__pycache__" not in line]
    dirty = bool(changes) if commit else None
    return Checkout(root, version, pin, commit, subject, dirty)


def active_path() -> str | None:
    return os.environ.get(ENV_VARIABLE) or None


@functools.cache
def _read_cached(path: str) -> Checkout:
    return read(path)


def active() -> Checkout | None:
    """The run's checkout (HARNESS_DYNAMO_SRC), else None."""
    path = active_path()
    return _read_cached(path) if path else None


def with_checkout(env: dict[str, str]) -> dict[str, str]:
    """`env` with the active checkout's components/src first on PYTHONPATH (ahead of
    site-packages, where the wheels are); unchanged without a checkout."""
    path = active_path()
    if not path:
        return env
    src = str(Path(path).absolute() / SRC)
    rest = env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    entries = [src, *(p for p in rest.split(os.pathsep) if p and p != src)]
    return {**env, "PYTHONPATH": os.pathsep.join(entries)}


_RUNTIME_MISFITS = (
    # dynamo.sglang logs a failed registration and serves on ("Failed to register ...: ")
    re.compile(r"[\w.]+\(\) got an unexpected keyword argument '\w+'"),
    re.compile(r"ImportError: cannot import name '\w+' from '(dynamo\.(_core|llm|runtime)|sglang)"),
    re.compile(r"ValueError: .*worker_type.*"),
)


def misfit_in_log(log_text: str) -> str | None:
    """The log line showing the checkout's Python and the runtime do not fit, if any (only
    with a checkout: an installed release's two wheels come as a pair)."""
    if active_path() is None:
        return None
    for line in log_text.splitlines():
        for pattern in _RUNTIME_MISFITS:
            found = pattern.search(line)
            if found:
                return found.group(0).strip()
    return None


def runtime_misfit(role: str, line: str) -> str:
    """The message of a misfit seen in a worker's log at run time."""
    checkout = active()
    env = dynamo_env.active()
    where = checkout.describe() if checkout else "?"
    return (
        f"{MISFIT}: worker '{role}' failed at run time with `{line}`: the checkout's Python "
        f"calls the runtime in a way it rejects (checkout {where}; runtime: {env.describe()}). "
        "Not a contract violation of the code: run it over the runtime of its release"
    )
