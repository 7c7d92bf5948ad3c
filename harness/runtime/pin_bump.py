"""What a new sglang newly imports, resolved from its own metadata (`ci/setup.sh --sglang`).

A pin-bump rehearsal builds the pinned Dynamo over another sglang release: the CPU tier's
runtime set as pinned, the new sglang without its CUDA dependencies. What that sglang imports
on the workers' start path and the environment lacks is found by the import probe, one module
at a time; the distribution providing it is looked up among the new sglang's own declared
requirements (checked against the wheel's files, never a table of known names) and installed
with the CPU torch held. The probe runs again until the start path imports, or says which
module no requirement provides.

    python -m discovery_harness.runtime.pin_bump VENV CONSTRAINTS
"""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from discovery_harness.runtime import dynamo_env, import_probe
from discovery_harness.runtime.tier import CPU

MOST_ROUNDS = 8  # modules added one at a time; more means the bump needs a person
CANDIDATES_TRIED = 5  # per missing module, the requirements named most like it
_METADATA = (
    "import importlib.metadata as m, json; "
    "print(json.dumps({'requires': m.requires('sglang') or [], 'installed': "
    "sorted({d.metadata['Name'] for d in m.distributions() if d.metadata['Name']})}))"
)


class BumpError(RuntimeError):
    """The new sglang's start path does not import and the metadata cannot say why."""


def declared(requires: list[str], installed: set[str]) -> list[Requirement]:
    """The new sglang's unconditional requirements for this platform that are not installed
    (an extra's are left out: the CPU tier installs none)."""
    wanted = []
    for text in requires:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is not None and not marker.evaluate({"extra": ""}):
            continue
        if canonicalize_name(requirement.name) not in installed:
            wanted.append(requirement)
    return wanted


def most_like(module: str, requirements: list[Requirement]) -> list[Requirement]:
    """The requirements whose names are most like the module's (a name holding the module's,
    as apache-tvm-ffi holds tvm_ffi, first)."""
    wanted = canonicalize_name(module)

    def closeness(requirement: Requirement) -> tuple[bool, float]:
        name = canonicalize_name(requirement.name)
        return wanted in name, difflib.SequenceMatcher(None, wanted, name).ratio()

    return sorted(requirements, key=closeness, reverse=True)[:CANDIDATES_TRIED]


def top_level_modules(wheel: Path) -> set[str]:
    """The importable top-level names a wheel installs (its files' first path parts)."""
    with zipfile.ZipFile(wheel) as archive:
        parts = {name.split("/")[0] for name in archive.namelist()}
    return {
        part.removesuffix(".py").split(".")[0]
        for part in parts
        if not part.endswith((".dist-info", ".data"))
    }


def _provides(requirement: Requirement, module: str, scratch: Path, pip: list[str]) -> bool:
    folder = scratch / canonicalize_name(requirement.name)
    done = subprocess.run(
        [
            *pip,
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(folder),
            str(requirement),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wheels = sorted(folder.glob("*.whl")) if done.returncode == 0 else []
    return bool(wheels) and module in top_level_modules(wheels[0])


def _metadata(python: str) -> tuple[list[str], set[str]]:
    done = subprocess.run([python, "-c", _METADATA], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout)
    return found["requires"], {canonicalize_name(n) for n in found["installed"]}


def resolve(venv: Path, constraints: Path) -> list[str]:
    """Add what the venv's sglang imports and lacks; return the requirements added."""
    env = dynamo_env.DynamoEnv(str(dynamo_env.interpreter(venv)), "bump", own=False)
    pip = [env.python, "-m", "pip", "--disable-pip-version-check"]
    added: list[str] = []
    with tempfile.TemporaryDirectory(prefix="harness-bump-") as scratch:
        for _ in range(MOST_ROUNDS):
            result = import_probe.run(env, stand_ins=CPU.stand_ins)
            if result.error is None:
                return added
            missing = result.missing_module()
            if missing is None:
                raise BumpError(f"the start path does not import: {result.failure()}")
            module = missing.split(".")[0]
            requires, installed = _metadata(env.python)
            candidates = most_like(module, declared(requires, installed))
            found = next((r for r in candidates if _provides(r, module, Path(scratch), pip)), None)
            if found is None:
                tried = ", ".join(str(r) for r in candidates) or "none"
                raise BumpError(
                    f"module `{module}` is imported ({result.failure()}) and no requirement "
                    f"of sglang provides it (tried: {tried})"
                )
            subprocess.run([*pip, "install", "-q", str(found), "-c", str(constraints)], check=True)
            added.append(str(found))
    raise BumpError(f"still missing modules after adding {', '.join(added)}")


def main(argv: list[str]) -> int:
    venv, constraints = Path(argv[0]), Path(argv[1])
    try:
        added = resolve(venv, constraints)
    except BumpError as failed:
        print(f"pin bump: {failed}", file=sys.stderr)
        return 1
    print(
        "pin bump: added "
        + (", ".join(added) if added else "nothing")
        + " (the start path imports)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
