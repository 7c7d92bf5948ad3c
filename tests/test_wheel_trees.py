"""A tree of a released wheel's own files, given as `--dynamo-src` over that release's
environment, gives the verdicts the release gives installed: the checkout path runs the same
code, not a second harness. Nightly: two conformance runs per release (0.8.0 where its
environment is built, and the harness's own 1.6.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from discovery_harness.history.run import DEFAULT_ENVS
from discovery_harness.runtime import dynamo_env
from tests import dynamo_trees
from tests.inner_pytest import run_cli

pytestmark = [pytest.mark.process, pytest.mark.e2e, pytest.mark.nightly]

# On 0.8.0: conformant, conformant with known findings (finding 30), a multimodal worker that
# exits; none of them timing-dependent there or on 1.6.1.
TOPOLOGIES = ("aggregated", "embedding", "mm-encode-pd")


def _verdicts(report_dir: Path) -> dict[str, tuple[bool, frozenset[tuple[str, str]]]]:
    """Per test: whether it failed, and its failing violations' (kind, role)."""
    report = json.loads((report_dir / "report.json").read_text())
    verdicts = {}
    for deployment in report["deployments"]:
        failed = {(v["kind"], v["role"] or "") for v in deployment["violations"]}
        verdicts[deployment["test"]] = (deployment["verdict"] == "failed", frozenset(failed))
    return verdicts


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "release", [pytest.param("0.8.0", marks=pytest.mark.long), dynamo_env.own().version]
)
def test_a_released_wheels_tree_gives_the_releases_own_verdicts(release: str, tmp_path: Path):
    own = release == dynamo_env.own().version
    env = None if own else DEFAULT_ENVS / f"dynamo-{release}"
    if env is not None and not (env / "bin" / "python").exists():
        pytest.skip(f"not built here: bash ci/setup.sh --dynamo {release}")
    site = None if env is None else dynamo_trees.site_packages(env)
    tree = dynamo_trees.make_tree(tmp_path / "tree", site=site)
    command = ["conformance", *(a for t in TOPOLOGIES for a in ("--topology", t))]
    command += [] if env is None else ["--dynamo-env", str(env)]
    installed = run_cli(*command, "--report-dir", str(tmp_path / "installed"), timeout=400)
    checkout = run_cli(
        *command,
        "--dynamo-src",
        str(tree),
        "--report-dir",
        str(tmp_path / "tree-run"),
        timeout=400,
    )
    output = checkout.stdout + checkout.stderr
    assert f"checkout: {tree}" in output and "checkout import probe: ok" in output, output[-3000:]
    assert checkout.returncode == installed.returncode, output[-3000:]
    by_tree, by_wheel = _verdicts(tmp_path / "tree-run"), _verdicts(tmp_path / "installed")
    assert len(by_wheel) == len(TOPOLOGIES), by_wheel
    assert by_tree == by_wheel
