"""Dynamo-checkout-shaped trees made at test time from the installed ai-dynamo wheel's own
files (CI has no Dynamo repository): its `dynamo/*` folders under `components/src/dynamo/`,
and a root pyproject.toml with the wheel's version and its `sglang` extra's pin. Edits put a
bug's shape into a tree's source: the registration call of an init function gone (#4486),
an import of a name the runtime lacks (a checkout too new for the runtime)."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import shutil
import subprocess
from pathlib import Path

from packaging.requirements import Requirement

from discovery_harness.runtime.dynamo_src import SRC

WHEEL = "ai-dynamo"  # components/src/dynamo/*; not ai-dynamo-runtime (the Rust bindings)
# The 1.6.1 multimodal worker registers through this function (register_model's readiness
# gate); #4486 was an init function that never awaited it.
REGISTRATION_CALLS = ("register_model_with_readiness_gate", "register_llm_with_readiness_check")


def wheel(site: Path | None = None) -> importlib.metadata.Distribution:
    """The ai-dynamo wheel installed here, or in the site-packages folder given (a release
    environment's)."""
    if site is None:
        return importlib.metadata.distribution(WHEEL)
    return next(iter(importlib.metadata.distributions(name=WHEEL, path=[str(site)])))


def site_packages(env: Path) -> Path:
    """A release environment's site-packages folder."""
    return next(env.glob("lib/python*/site-packages"))


def wheel_files(site: Path | None = None) -> list[importlib.metadata.PackagePath]:
    files = wheel(site).files or []
    return [f for f in files if f.parts[0] == "dynamo" and "__pycache__" not in f.parts]


def sglang_pin(site: Path | None = None) -> str:
    for text in wheel(site).requires or []:
        requirement = Requirement(text)
        if requirement.name == "sglang":
            return next(s.version for s in requirement.specifier if s.operator == "==")
    raise LookupError(f"{WHEEL} pins no sglang")


def pyproject(version: str | None = None, pin: str | None = None, site: Path | None = None) -> str:
    version = version or wheel(site).version
    return (
        '[project]\nname = "ai-dynamo"\n'
        f'version = "{version}"\n\n'
        "[project.optional-dependencies]\n"
        f'sglang = ["uvloop", "sglang[diffusion]=={pin or sglang_pin(site)}"]\n'
    )


def make_tree(root: Path, only: tuple[str, ...] = (), site: Path | None = None) -> Path:
    """A checkout-shaped tree at root from the installed wheel's files (`only` these
    dynamo/* folders: a smaller tree for what deploys nothing; `site`: a release
    environment's site-packages, else the harness's own)."""
    for file in wheel_files(site):
        if only and file.parts[1] not in only:
            continue
        target = root / SRC / Path(*file.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file.locate(), target)
    (root / "pyproject.toml").write_text(pyproject(site=site))
    return root


def installed_hashes() -> dict[str, str]:
    """sha256 of every installed file of the wheel (the run must change none)."""
    return {
        str(f): hashlib.sha256(Path(str(f.locate())).read_bytes()).hexdigest()
        for f in wheel_files()
    }


def _call_in(source: str, function: str, names: tuple[str, ...]) -> ast.Call:
    tree = ast.parse(source)
    outer = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.AsyncFunctionDef | ast.FunctionDef) and n.name == function
    )
    return next(
        n
        for n in ast.walk(outer)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
    )


def _offset(source: str, line: int, column: int) -> int:
    return sum(len(text) for text in source.splitlines(keepends=True)[: line - 1]) + column


def skip_registration(
    root: Path, module: str = "sglang/init_multimodal.py", function: str = "init_multimodal_worker"
) -> Path:
    """The #4486 shape: `function` no longer awaits its registration call (it becomes
    `asyncio.sleep(0)`, so a gather around it still serves)."""
    path = root / SRC / "dynamo" / module
    source = path.read_text()
    call = _call_in(source, function, REGISTRATION_CALLS)
    assert call.end_lineno is not None and call.end_col_offset is not None
    start = _offset(source, call.lineno, call.col_offset)
    end = _offset(source, call.end_lineno, call.end_col_offset)
    path.write_text(source[:start] + "asyncio.sleep(0)  # #4486: never registers" + source[end:])
    return path


def keyword_the_runtime_lacks(root: Path, keyword: str = "harness_next_runtime_keyword") -> Path:
    """The registration passes a keyword the installed runtime's register_model does not
    take (a checkout written for a newer runtime): it shows only at run time."""
    path = root / SRC / "dynamo" / "sglang" / "register.py"
    source = path.read_text()
    call = _call_in(source, "_register_model_with_runtime_config", ("register_model",))
    last = call.keywords[-1].value
    assert last.end_lineno is not None and last.end_col_offset is not None
    end = _offset(source, last.end_lineno, last.end_col_offset)  # after its last argument
    path.write_text(source[:end] + f", {keyword}=True" + source[end:])
    return path


def import_missing_name(
    root: Path, module: str = "sglang/main.py", name: str = "NoSuchThing"
) -> Path:
    """A start module importing a name the installed runtime lacks (a newer checkout)."""
    path = root / SRC / "dynamo" / module
    path.write_text(f"from dynamo._core import {name}  # noqa\n" + path.read_text())
    return path


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "harness test",
            "GIT_AUTHOR_EMAIL": "harness@example.invalid",
            "GIT_COMMITTER_NAME": "harness test",
            "GIT_COMMITTER_EMAIL": "harness@example.invalid",
            "PATH": "/usr/bin:/bin",
            "HOME": str(root),
        },
    )
    return done.stdout.strip()


def commit_all(root: Path, message: str) -> str:
    with (root / "history.txt").open("a") as log:  # every commit changes something
        log.write(message + "\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")
