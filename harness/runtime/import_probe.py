"""The workers' start path imported once, in the workers' own environment, before any starts.

A release environment (`--dynamo-env`) or a checkout over one (`--dynamo-src`) whose stack
cannot be imported (a module a new sglang imports and the environment lacks) would otherwise
fail every worker at import, each after its registration deadline. One throwaway process of
that interpreter runs `discovery_harness_workers.import_probe` with the environment the
workers get (on the CPU tier their stand-ins first) and reports the first failure: any
module, not a list of known ones.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from discovery_harness.common import locations
from discovery_harness.runtime import dynamo_env
from discovery_harness.runtime.dynamo_src import with_checkout
from discovery_harness.runtime.tier import TierPolicy

# What a deployment imports: dynamo.sglang.main imports every init module; the frontend its own.
START_MODULES = ("dynamo.frontend.main", "dynamo.sglang.main")
PROBE_DEADLINE_S = 300.0
_MODULE = "discovery_harness_workers.import_probe"
_MARKER = "HARNESS-PROBE "
_CRASH = "crash"  # the error type of a probe that died before it could say anything
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


@dataclass(frozen=True)
class ProbeResult:
    versions: dict[str, str | None]
    origins: dict[str, str | None]
    seconds: float
    error: dict[str, Any] | None = None  # the first failure (type, message, module, where)
    runtime_modules: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        sglang = self.origins.get("dynamo.sglang") or "?"
        core = self.origins.get("dynamo._core") or "?"
        return f"dynamo.sglang from {sglang}; dynamo._core from {core}"

    @property
    def crashed(self) -> bool:
        return (self.error or {}).get("type") == _CRASH

    def missing_module(self) -> str | None:
        """The module the failure says is not installed (dotted, as the message names it)."""
        found = _NO_MODULE.search(str((self.error or {}).get("message") or ""))
        return found.group(1) if found else None

    def advice(self, install: str) -> str:
        """What to do about the failure: install the missing module (`install` says where),
        or, for any other failure, that the packages do not fit together."""
        missing = self.missing_module()
        if missing:
            return f"module `{missing}` is not installed there; install it {install}"
        return "its packages do not fit together"

    def failure(self) -> str:
        """The first failure in one line: what was imported, what failed, where."""
        error = self.error or {}
        message = " ".join(str(error.get("message") or "").split())
        where = f" ({error['where']})" if error.get("where") else ""
        return f"importing {error.get('importing')} fails: {error.get('type')}: {message}{where}"


def environment(stand_ins: bool) -> dict[str, str]:
    """The probe's environment, as the workers get theirs: the folder holding only the
    workers package on the path (nothing else of the harness's), the checkout first where
    one is used, and no GPU on the CPU tier."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base["PYTHONPATH"] = str(locations.worker_import_root())
    if stand_ins:
        base["CUDA_VISIBLE_DEVICES"] = ""
    else:
        base["CUDA_VISIBLE_DEVICES"] = base.get("CUDA_VISIBLE_DEVICES", "")
    return with_checkout(base)


def run(
    env: dynamo_env.DynamoEnv,
    stand_ins: bool,
    modules: tuple[str, ...] = START_MODULES,
    environ: dict[str, str] | None = None,
) -> ProbeResult:
    """Import `modules` in a throwaway process of `env`; a crash before the probe could say
    anything is an error too (its last stderr line)."""
    started = time.monotonic()
    argv = [env.python, "-m", _MODULE, *(["--stand-ins"] if stand_ins else []), *modules]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=PROBE_DEADLINE_S,
        env=environ if environ is not None else environment(stand_ins),
        check=False,
    )
    seconds = time.monotonic() - started
    line = next((x for x in done.stdout.splitlines() if x.startswith(_MARKER)), None)
    if line is None:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        crashed = {"type": _CRASH, "message": tail, "importing": "the import probe"}
        return ProbeResult({}, {}, seconds, crashed)
    found = json.loads(line[len(_MARKER) :])
    return ProbeResult(
        found["versions"],
        found["from"],
        seconds,
        found["error"],
        tuple(found.get("runtime_modules") or ()),
    )


def refuse_unimportable(env: dynamo_env.DynamoEnv, tier: TierPolicy) -> str:
    """The run's first line about `env` when its workers' start path imports; else
    DynamoEnvError in one line naming the environment and what failed."""
    result = run(env, stand_ins=tier.stand_ins)
    if result.error is None:
        return f"Dynamo environment import probe: ok in {result.seconds:.1f} s ({env.python})"
    raise dynamo_env.DynamoEnvError(
        f"--dynamo-env {env.python}: its workers cannot start: "
        f"{result.advice('into that environment')} "
        f"({result.failure()}; sglang {result.versions.get('sglang') or '?'}, "
        f"ai-dynamo {result.versions.get('ai-dynamo') or '?'}); nothing was started"
    )
