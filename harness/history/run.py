"""Run the conformance suite once per Dynamo release and collect what each topology did.

Each release runs in its own pytest process (`--dynamo-env` its environment, or the harness's
own for its own release), probing after failed readiness so a topology that serves although a
worker never registered shows both. Nothing here knows which release is buggy: the findings
come from the JUnit file of each run.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from discovery_harness.common import child, locations
from discovery_harness.history.record import ItemFindings
from discovery_harness.history.stability import Stable, finding_keys, more_runs_needed
from discovery_harness.runtime import dynamo_env, gpus

CONFORMANCE_TEST = "test_registers_and_serves"
DEFAULT_ENVS = Path(".venvs").absolute()  # where ci/setup.sh --dynamo builds, run from here


@dataclass
class ReleaseRun:
    release: str
    env: str  # the interpreter, or why there is none
    findings: dict[str, ItemFindings] = field(default_factory=dict)  # by topology
    error: str | None = None  # the run could not happen (no environment, pytest crashed)
    seconds: float = 0.0


def environment_for(release: str, envs_dir: Path) -> dynamo_env.DynamoEnv:
    """The harness's own environment for its own release, else envs_dir/dynamo-RELEASE."""
    own = dynamo_env.own()
    if release == own.version:
        return own
    found = dynamo_env.resolve(envs_dir / f"dynamo-{release}")
    if found.version != release:
        raise dynamo_env.DynamoEnvError(
            f"{envs_dir / f'dynamo-{release}'} holds ai-dynamo {found.version}, not {release}"
        )
    return found


def run_release(
    release: str, topologies: list[str], envs_dir: Path, out_dir: Path, extra: list[str]
) -> ReleaseRun:
    try:
        env = environment_for(release, envs_dir)
    except dynamo_env.DynamoEnvError as missing:
        return ReleaseRun(
            release, "-", error=f"{missing} (build it: bash ci/setup.sh --dynamo {release})"
        )
    junit = out_dir / f"junit-{release}.xml"
    log = out_dir / f"pytest-{release}.log"
    code = run_conformance(
        Selection(topologies=tuple(topologies)), env.python, junit, out_dir / release, log, extra
    )
    run = ReleaseRun(release, env.describe())
    if not junit.exists():
        run.error = f"pytest exited {code} without a report; see {log}"
        return run
    run.findings, run.seconds = read_junit(junit)
    return run


def rerun_failed(
    run: ReleaseRun, envs_dir: Path, out_dir: Path, extra: list[str], most: int
) -> ReleaseRun:
    """The release's failed topologies run again (each run's files in a folder of its own,
    the first run's report kept), until two runs agree, `most` runs in all: each failed cell
    then says whether its violations are deterministic or a window seen k of N times."""
    if run.error or most < 2:
        return run
    runs = {
        topology: [finding_keys(topology, item)]
        for topology, item in run.findings.items()
        if item.outcome in ("failed", "error")
    }
    for attempt in range(2, most + 1):
        todo = [t for t, keys in runs.items() if more_runs_needed(keys, most)]
        if not todo:
            break
        again_dir = out_dir / "reruns" / f"{run.release}-run{attempt}"
        again_dir.mkdir(parents=True, exist_ok=True)
        again = run_release(run.release, todo, envs_dir, again_dir, extra)
        if again.error:
            break
        for topology in todo:
            found = again.findings.get(topology)
            runs[topology].append(finding_keys(topology, found) if found else runs[topology][0])
    for topology, keys in runs.items():
        stable = Stable.of(keys)
        run.findings[topology].stability = stable.label
        run.findings[topology].stable = stable.record()
    return run


@dataclass(frozen=True)
class Selection:
    """Which conformance tests a run takes: named topologies (all when none), or a marker
    expression."""

    topologies: tuple[str, ...] = ()
    markers: str | None = None

    def pytest_args(self) -> list[str]:
        tests = str(locations.conformance_tests())
        if self.markers:
            return [tests, "-m", f"({self.markers}) and not selftest"]
        items = [f"{tests}::{CONFORMANCE_TEST}[{name}]" for name in self.topologies]
        # Any -m lets nightly topologies (the CPU tier's gateway) in: the history runs all.
        return [*(items or [tests]), "-m", "not selftest"]

    def describe(self) -> str:
        if self.markers:
            return f"-m {self.markers!r}"
        return ", ".join(self.topologies) or "every topology"


def run_conformance(
    selection: Selection,
    python: str | None,
    junit: Path,
    report_dir: Path,
    log: Path,
    extra: list[str],
    popen: child.Runner | None = None,
) -> int:
    """One conformance run in its own pytest process (`python`'s Dynamo; None: the one the
    run chooses, e.g. for its --dynamo-src in `extra`), probing after
    failed readiness; its JUnit file at `junit`. Returns pytest's exit code."""
    argv = [
        sys.executable,
        "-m",
        "pytest",
        *selection.pytest_args(),
        *(["--dynamo-env", python] if python else []),
        "--probe-after-failure",
        f"--junitxml={junit}",
        f"--report-dir={report_dir}",
        "-o",
        "junit_logging=no",
        "-p",
        "no:cacheprovider",
        "-q",
        *extra,
    ]
    junit.unlink(missing_ok=True)
    with log.open("w") as sink:
        if popen is not None:
            return popen(argv, sink)
        return child.run(argv, sink, gpus.session_of_its_own())


def read_junit(junit: Path) -> tuple[dict[str, ItemFindings], float]:
    """Findings per topology from one run's JUnit file."""
    root = ElementTree.parse(junit).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    findings: dict[str, ItemFindings] = {}
    for case in root.iter("testcase"):
        name = case.get("name", "")
        if not name.startswith(CONFORMANCE_TEST + "["):
            continue
        topology = name[len(CONFORMANCE_TEST) + 1 : -1]
        item = ItemFindings(*outcome(case))
        for prop in case.iter("property"):
            if prop.get("name") == "known_violation":
                item.known.append(prop.get("value", ""))
            else:
                item.add(prop.get("name", ""), prop.get("value", ""))
        findings[topology] = item
    seconds = float(suite.get("time", 0)) if suite is not None else 0.0
    return findings, seconds


def outcome(case: ElementTree.Element) -> tuple[str, str]:
    """A JUnit test case's outcome (passed, failed, error, skipped) and its first message line."""
    for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        found = case.find(tag)
        if found is not None:
            text = found.get("message") or found.text or ""
            return outcome, text.strip().splitlines()[0] if text.strip() else ""
    return "passed", ""
