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
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from discovery_harness.runtime import dynamo_env, dynamo_src, import_probe
from discovery_harness.runtime.dynamo_src import (
    ENV_VARIABLE,
    MISFIT,
    Checkout,
    Misfit,
    read,
)
from discovery_harness.runtime.import_probe import ProbeResult
from discovery_harness.runtime.tier import TierPolicy

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


def use(path: str, given_env: str | None) -> tuple[Checkout, list[str]]:
    """Make `path` the run's checkout (HARNESS_DYNAMO_SRC) over the environment that fits
    it, or `given_env` (HARNESS_DYNAMO_ENV). Returns the checkout and the run's first lines;
    `probe_before_start` then tries the pair's imports, once the tier is known."""
    os.environ[ENV_VARIABLE] = str(Path(path).expanduser().absolute())
    checkout = read(path)
    choice = choose_env(checkout, given_env)
    os.environ[dynamo_env.ENV_VARIABLE] = choice.env.python
    lines = [
        f"checkout: {checkout.describe()}",
        f"checkout runs over: {choice.env.describe()}: {choice.reason}",
    ]
    return checkout, lines


def probe_before_start(tier: TierPolicy) -> list[str]:
    """The one import probe of a run, before anything starts, of what its workers import as
    `tier` starts them: the checkout over its environment (Misfit), else a release
    environment (DynamoEnvError); the harness's own environment is the one it was installed
    and tested with. Returns the run's first line about it."""
    env, checkout = dynamo_env.active(), dynamo_src.active()
    if checkout is not None:
        probed = probe(checkout, env, stand_ins=tier.stand_ins)
        return [f"checkout import probe: ok in {probed.seconds:.1f} s ({probed.describe()})"]
    if env.own:
        return []
    return [import_probe.refuse_unimportable(env, tier)]


# --- does the pair run? -------------------------------------------------------------------

_CANNOT_IMPORT = re.compile(r"cannot import name '([\w.]+)' from '([\w.]+)'")


def probe(checkout: Checkout, env: dynamo_env.DynamoEnv, stand_ins: bool = False) -> ProbeResult:
    """Import the start paths in a throwaway process of `env` with the checkout first; raise
    Misfit naming the missing name and both versions when they do not fit."""
    previous = os.environ.get(ENV_VARIABLE)
    os.environ[ENV_VARIABLE] = str(checkout.root)
    try:
        environment = import_probe.environment(stand_ins)
    finally:
        if previous is None:
            os.environ.pop(ENV_VARIABLE, None)
        else:
            os.environ[ENV_VARIABLE] = previous
    result = import_probe.run(env, stand_ins, environ=environment)
    if result.crashed:
        tail = (result.error or {}).get("message")
        raise Misfit(f"{MISFIT}: the import probe of {checkout.root} crashed: {tail}")
    if result.error:
        raise Misfit(misfit_message(checkout, env, result))
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


def misfit_message(checkout: Checkout, env: dynamo_env.DynamoEnv, result: ProbeResult) -> str:
    """One error naming the missing name, who lacks it, and both sides' versions."""
    error = result.error or {}
    message = str(error.get("message") or "")
    runtime_modules = set(result.runtime_modules)
    cannot = _CANNOT_IMPORT.search(message)
    owner = cannot.group(2) if cannot else (result.missing_module() or "")
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
