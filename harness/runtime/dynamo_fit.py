"""Which release environment a Dynamo checkout runs over, and whether the pair runs at all.

The environment is chosen from the checkout's root pyproject.toml (its version and its
`sglang` extra's pin): the same minor release, else the nearest, with the reason said
(--dynamo-env overrides). Before any worker starts, an import probe of the start paths in a
throwaway process of that environment, the checkout first on its path, refuses a pair that
cannot run as one "checkout and runtime do not fit" error naming the missing name and both
sides' versions (discovery_harness.runtime.dynamo_src says how the checkout is put first).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from discovery_harness.common import locations
from discovery_harness.runtime import dynamo_env
from discovery_harness.runtime.dynamo_src import (
    ENV_VARIABLE,
    MISFIT,
    Checkout,
    Misfit,
    read,
    with_checkout,
)

# The start paths a deployment imports: the probe imports each (dynamo.sglang.main imports
# every init module; the frontend's main its own).
START_MODULES = ("dynamo.frontend.main", "dynamo.sglang.main")
PROBE_DEADLINE_S = 300.0

# --- which release environment fits ------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    env: dynamo_env.DynamoEnv
    sglang: str | None


@dataclass(frozen=True)
class EnvChoice:
    env: dynamo_env.DynamoEnv
    reason: str


def _minor(version: str) -> tuple[int, ...]:
    return Version(version).release[:2]


def _distance(a: str, b: str) -> tuple[int, int]:
    va, vb = (*Version(a).release, 0, 0), (*Version(b).release, 0, 0)
    return abs(va[0] - vb[0]), abs(va[1] - vb[1])


def choose(checkout: Checkout, candidates: Iterable[Candidate]) -> EnvChoice:
    """The environment whose ai-dynamo has the checkout's minor version (its sglang matching
    the pin first, then the newest patch); else the nearest version, with the reason."""
    found = [c for c in candidates if c.env.version != "unknown"]
    if not found:
        raise dynamo_env.DynamoEnvError("no Dynamo environment to run the checkout over")
    wanted = checkout.version
    try:
        Version(wanted or "")
    except InvalidVersion:
        own = next((c for c in found if c.env.own), found[0])
        return EnvChoice(
            own.env,
            f"the checkout's pyproject.toml has no version ({wanted!r}): the harness's own",
        )
    assert wanted is not None

    def rank(c: Candidate) -> tuple[bool, tuple[int, ...]]:
        return (c.sglang == checkout.sglang_pin, Version(c.env.version).release)

    same = [c for c in found if _minor(c.env.version) == _minor(wanted)]
    if same:
        best = max(same, key=rank)
        sglang = (
            f", sglang {best.sglang} as pinned"
            if best.sglang == checkout.sglang_pin
            else f", sglang {best.sglang} (the checkout pins {checkout.sglang_pin})"
        )
        return EnvChoice(
            best.env,
            f"same minor release as the checkout's version {wanted}{sglang}",
        )
    best = min(found, key=lambda c: (_distance(c.env.version, wanted), not rank(c)[0]))
    have = ", ".join(sorted({c.env.version for c in found}, key=Version))
    return EnvChoice(
        best.env,
        f"no environment of the checkout's minor release ({wanted}; there are: {have}): the "
        f"nearest, which may not fit (build one: bash ci/setup.sh --dynamo "
        f"{'.'.join(map(str, _minor(wanted)))}.N; or pass --dynamo-env)",
    )


def _sglang_of(env: dynamo_env.DynamoEnv) -> str | None:
    if env.own:
        try:
            return importlib.metadata.version("sglang")
        except importlib.metadata.PackageNotFoundError:
            return None
    venv = Path(env.python).parent.parent
    for info in venv.glob("lib/python*/site-packages/sglang-*.dist-info"):
        return info.name[len("sglang-") : -len(".dist-info")]
    return None


def candidates(envs_dir: Path) -> list[Candidate]:
    """The harness's own environment and every release environment built in envs_dir."""
    envs = [dynamo_env.own()]
    for folder in sorted(envs_dir.glob("dynamo-*")) if envs_dir.is_dir() else []:
        try:
            envs.append(dynamo_env.resolve(folder))
        except dynamo_env.DynamoEnvError:
            continue
    return [Candidate(e, _sglang_of(e)) for e in envs]


def release_envs() -> Path:
    """Where `ci/setup.sh --dynamo VERSION` builds release environments (run from here)."""
    return Path(os.environ.get("HARNESS_ENVS_DIR") or ".venvs").absolute()


def choose_env(checkout: Checkout, given: str | None, envs_dir: Path | None = None) -> EnvChoice:
    """--dynamo-env when given (it overrides), else the environment that fits."""
    envs_dir = envs_dir or release_envs()
    if given:
        return EnvChoice(dynamo_env.resolve(given), "given by --dynamo-env")
    return choose(checkout, candidates(envs_dir))


def use(path: str, given_env: str | None, probe_imports: bool = True) -> tuple[Checkout, list[str]]:
    """Make `path` the run's checkout (HARNESS_DYNAMO_SRC) over the environment that fits
    it, or `given_env` (HARNESS_DYNAMO_ENV), and probe the pair's imports before anything
    starts (Misfit when they do not fit). Returns the checkout and the run's first lines."""
    os.environ[ENV_VARIABLE] = str(Path(path).expanduser().absolute())
    checkout = read(path)
    choice = choose_env(checkout, given_env)
    os.environ[dynamo_env.ENV_VARIABLE] = choice.env.python
    lines = [
        f"checkout: {checkout.describe()}",
        f"checkout runs over: {choice.env.describe()}: {choice.reason}",
    ]
    if probe_imports:
        probed = probe(checkout, choice.env)
        lines.append(f"checkout import probe: ok in {probed.seconds:.1f} s ({probed.describe()})")
    return checkout, lines


# --- does the pair run? -------------------------------------------------------------------

# Run in the chosen environment's python, the checkout first on its path: import each start
# module, say where dynamo.sglang and dynamo._core came from, and what failed.
_PROBE = r"""
import importlib, importlib.metadata as md, json, sys, traceback
out = {"versions": {}, "from": {}, "error": None}
for dist in ("ai-dynamo", "ai-dynamo-runtime", "sglang"):
    try:
        out["versions"][dist] = md.version(dist)
    except md.PackageNotFoundError:
        out["versions"][dist] = None
try:
    runtime_files = md.files("ai-dynamo-runtime") or []
except md.PackageNotFoundError:
    runtime_files = []
out["runtime_modules"] = sorted({
    "dynamo." + p.parts[1].split(".")[0] for p in runtime_files
    if len(p.parts) > 1 and p.parts[0] == "dynamo"
})
try:
    from discovery_harness_workers import torchvision_shim
    torchvision_shim.apply()
except ImportError:
    pass
try:
    for name in sys.argv[1:]:
        importlib.import_module(name)
except BaseException as failed:
    out["error"] = {
        "type": type(failed).__name__, "message": str(failed),
        "module": getattr(failed, "name", None), "importing": name,
        "where": traceback.format_exception(failed)[-2].strip().splitlines()[0]
        if len(traceback.format_exception(failed)) > 1 else "",
    }
for name in ("dynamo.sglang", "dynamo.frontend", "dynamo._core"):
    module = sys.modules.get(name)
    out["from"][name] = getattr(module, "__file__", None) or str(
        list(getattr(module, "__path__", [])))
print("HARNESS-PROBE " + json.dumps(out))
"""

_CANNOT_IMPORT = re.compile(r"cannot import name '([\w.]+)' from '([\w.]+)'")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


@dataclass(frozen=True)
class ProbeResult:
    versions: dict[str, str | None]
    origins: dict[str, str | None]
    seconds: float

    def describe(self) -> str:
        sglang = self.origins.get("dynamo.sglang") or "?"
        core = self.origins.get("dynamo._core") or "?"
        return f"dynamo.sglang from {sglang}; dynamo._core from {core}"


def probe_env(env: dynamo_env.DynamoEnv) -> dict[str, str]:
    """The probe's environment: the checkout first, then the folder holding only the
    workers package (its torchvision shim); nothing else of the harness's."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base["PYTHONPATH"] = str(locations.worker_import_root())
    base["CUDA_VISIBLE_DEVICES"] = base.get("CUDA_VISIBLE_DEVICES", "")
    return with_checkout(base)


def probe(checkout: Checkout, env: dynamo_env.DynamoEnv) -> ProbeResult:
    """Import the start paths in a throwaway process of `env` with the checkout first; raise
    Misfit naming the missing name and both versions when they do not fit."""
    started = time.monotonic()
    previous = os.environ.get(ENV_VARIABLE)
    os.environ[ENV_VARIABLE] = str(checkout.root)
    try:
        environment = probe_env(env)
    finally:
        if previous is None:
            os.environ.pop(ENV_VARIABLE, None)
        else:
            os.environ[ENV_VARIABLE] = previous
    done = subprocess.run(
        [env.python, "-c", _PROBE, *START_MODULES],
        capture_output=True,
        text=True,
        timeout=PROBE_DEADLINE_S,
        env=environment,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("HARNESS-PROBE ")), None)
    if line is None:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise Misfit(f"{MISFIT}: the import probe of {checkout.root} crashed: {tail}")
    found = json.loads(line[len("HARNESS-PROBE ") :])
    result = ProbeResult(found["versions"], found["from"], time.monotonic() - started)
    if found["error"]:
        raise Misfit(misfit_message(checkout, env, found["error"], found, result))
    sglang_from = result.origins.get("dynamo.sglang") or ""
    if not sglang_from.startswith(str(checkout.src)):
        raise Misfit(
            f"dynamo.sglang was imported from {sglang_from}, not from the checkout's "
            f"{checkout.src}: the installed wheel shadows it (a dynamo/__init__.py?)"
        )
    return result


def _versions(checkout: Checkout, versions: dict[str, str | None]) -> str:
    return (
        f"checkout: ai-dynamo {checkout.version or '?'} (pyproject.toml) pinning sglang "
        f"{checkout.sglang_pin or '?'}; runtime: ai-dynamo-runtime "
        f"{versions.get('ai-dynamo-runtime') or '?'}, sglang {versions.get('sglang') or '?'}"
    )


def _owner_dist(owner: str, versions: dict[str, str | None]) -> str:
    dist = "sglang" if owner.startswith("sglang") else "ai-dynamo-runtime"
    return f"{dist} {versions.get(dist) or '?'}"


def misfit_message(
    checkout: Checkout,
    env: dynamo_env.DynamoEnv,
    error: dict[str, str | None],
    found: dict[str, object],
    result: ProbeResult,
) -> str:
    """One error naming the missing name, who lacks it, and both sides' versions."""
    message = str(error.get("message") or "")
    runtime_modules = set(found.get("runtime_modules") or [])  # type: ignore[call-overload]
    cannot = _CANNOT_IMPORT.search(message)
    missing = _NO_MODULE.search(message)
    owner = cannot.group(2) if cannot else (missing.group(1) if missing else "")
    owned_by_env = owner.startswith("sglang") or any(
        owner == m or owner.startswith(m + ".") for m in runtime_modules
    )
    what = f"`{cannot.group(1)}` from {owner}" if cannot else f"module `{owner or '?'}`"
    if owned_by_env:
        return (
            f"{MISFIT}: the checkout {checkout.root} imports {what}, which "
            f"{_owner_dist(owner, result.versions)} of {env.python} does not have "
            f"({error.get('where') or message}; "
            f"importing {error.get('importing')}). {_versions(checkout, result.versions)}. "
            "Use an environment of the checkout's release (--dynamo-env; build: bash "
            "ci/setup.sh --dynamo VERSION)"
        )
    return (
        f"{MISFIT}: the checkout {checkout.root} does not import over {env.describe()}: "
        f"{error.get('type')}: {message} ({error.get('where') or ''}; importing "
        f"{error.get('importing')}). {_versions(checkout, result.versions)}"
    )


# A worker's log line that says the checkout's Python and the runtime disagree at run time
# (registration): a keyword the runtime's binding rejects, a name it lacks.
