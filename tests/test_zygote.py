"""The worker template's fidelity rules, each enforced: no thread before fork, no per-worker
variable frozen at import, and a refusal (not a silently different worker) when either breaks."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from discovery_harness.cli.plan import build_plan
from discovery_harness.common.deadline import Deadline
from discovery_harness.model.catalogue import load
from discovery_harness.runtime.launch import template_env
from discovery_harness.runtime.spawn import (
    TEMPLATE_IMPORT_DEADLINE_S,
    TemplateImportFailed,
    TemplateUnfit,
    Zygote,
)
from discovery_harness.runtime.tier import CPU

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.e2e, pytest.mark.gpu_0]


@pytest.fixture
def template(worker_template: Zygote | None) -> Zygote:
    if worker_template is None:
        pytest.skip("no worker template in this run (--spawn fresh)")
    worker_template.wait_ready(Deadline(TEMPLATE_IMPORT_DEADLINE_S))
    return worker_template


def test_the_template_runs_no_thread_or_runtime_before_it_forks(template):
    info = template.wait_ready(Deadline(1))
    assert info.problems() == []
    assert (info.os_threads, info.threads) == (1, ("MainThread",))
    assert info.modules > 1000 and "TMPDIR" in info.reread


def test_no_worker_of_the_catalogue_differs_from_the_template_in_a_frozen_variable(
    template, tmp_path
):
    """Every CPU-tier worker command, against a template built the way the session builds
    it: what the template read at import is the same for every worker, or re-read."""
    info = template.wait_ready(Deadline(1))
    hf_home = tmp_path / "hf"
    base = template_env(hf_home, tmp_path / "t")
    commands = build_plan(load(), CPU, workdir=tmp_path)
    assert commands and all(c.env["HF_HOME"] == str(hf_home) for c in commands)
    frozen = {f"{c.topology}/{c.role}": info.frozen_for(base, c.environment()) for c in commands}
    assert not any(frozen.values()), frozen
    # What a worker or its session holds of its own is read after the fork, never at import
    # (a session's etcd and NATS are not in the template's environment: one template serves
    # every session of a run).
    per_worker = {"DYN_TCP_RPC_PORT", "DYN_TCP_RESPONSE_STREAM_PORT", "DYN_SYSTEM_PORT"}
    per_session = {"ETCD_ENDPOINTS", "NATS_SERVER"}
    assert not (per_worker | per_session) & info.env_reads
    assert not per_session & base.keys()


def test_a_guest_session_forks_there_and_hears_of_its_own_children_only(template, tmp_path):
    """Two sessions joined to one template (as each xdist worker joins the run's): each gets
    its own children's exits; one hanging up leaves the template to the other."""
    assert template.address is not None
    planned = build_plan(load(), CPU, workdir=tmp_path, topologies=["aggregated"])[0]
    exits_at_once = dataclasses.replace(
        planned, dynamo_argv=("--no-such-flag",), env={**template.env}
    )
    first, second = (
        Zygote.join(template.address, template.env, template.log_path, template.pid, ROOT)
        for _ in range(2)
    )
    try:
        for guest in (first, second):
            assert guest.wait_ready(Deadline(10)).pid == template.pid
        mine = first.spawn(exits_at_once, ROOT, tmp_path / "first.log")
        theirs = second.spawn(exits_at_once, ROOT, tmp_path / "second.log")
        assert (mine.wait(timeout=30), theirs.wait(timeout=30)) == (2, 2)  # argparse's usage
        assert mine.pid not in second._children and theirs.pid not in first._children
        first.stop()
        again = second.spawn(exits_at_once, ROOT, tmp_path / "again.log")
        assert again.wait(timeout=30) == 2
        assert "usage:" in (tmp_path / "again.log").read_text()  # its own log
    finally:
        first.stop()
        second.stop()


@pytest.mark.parametrize(
    ("variable", "value"), [("DYN_LOG", "debug"), ("DYN_DISCOVERY_BACKEND", "file")]
)
def test_a_worker_whose_import_time_variable_differs_is_refused(
    template, tmp_path, variable, value
):
    planned = build_plan(load(), CPU, workdir=tmp_path, topologies=["aggregated"])[0]
    command = dataclasses.replace(planned, env={**template.env, variable: value})
    with pytest.raises(TemplateUnfit, match=f"frozen: {variable}"):
        template.spawn(command, ROOT, tmp_path / "w.log")


@pytest.mark.nightly
def test_a_template_that_starts_a_thread_at_import_is_refused_and_its_reads_listed(tmp_path):
    env = {
        **template_env(tmp_path / "hf", tmp_path / "t"),
        "HARNESS_TEST_READ_AT_IMPORT": "1",
    }
    zygote = Zygote(env, tmp_path / "z.log", ROOT, also_import=("tests.template_with_thread",))
    zygote.start()
    try:
        with pytest.raises(TemplateUnfit, match="started-at-import"):
            zygote.wait_ready(Deadline(TEMPLATE_IMPORT_DEADLINE_S))
        assert zygote.info is not None and "HARNESS_TEST_READ_AT_IMPORT" in zygote.info.env_reads
    finally:
        zygote.stop()


BLOCKS_TORCH = """
import sys

class _Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            raise ModuleNotFoundError("No module named 'torch'", name="torch")

sys.meta_path.insert(0, _Uninstalled())
"""


def test_a_template_that_cannot_import_is_one_line_naming_the_module(tmp_path):
    """The own environment is not probed up front: its template's failed import is the
    refusal, in one line naming the environment and the module, not a traceback per test."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BLOCKS_TORCH)
    env = {
        **template_env(tmp_path / "hf", tmp_path / "t"),
        "PYTHONPATH": str(tmp_path / "site"),
    }
    address = tmp_path / "t.sock"
    zygote = Zygote(env, tmp_path / "z.log", ROOT, address=address).start()
    try:
        with pytest.raises(TemplateImportFailed) as refused:
            zygote.wait_ready(Deadline(TEMPLATE_IMPORT_DEADLINE_S))
        guest = Zygote.join(address, env, tmp_path / "z.log", zygote.pid, ROOT)  # too late
        with pytest.raises(TemplateImportFailed) as refused_too:
            guest.wait_ready(Deadline(TEMPLATE_IMPORT_DEADLINE_S))
    finally:
        zygote.stop()
    line = str(refused.value)
    assert "\n" not in line and sys.executable in line
    assert "module `torch` is not installed there" in line
    assert "ModuleNotFoundError: No module named 'torch'" in line
    told = str(refused_too.value)  # the guest reads it from the template's last log line
    assert "\n" not in told and f"pid {zygote.pid}" in told and "No module named 'torch'" in told


def test_a_child_recomputes_what_the_template_cached_from_its_environment(tmp_path):
    """TMPDIR is read at import (tempfile caches it): a forked child must use its own."""
    mine, template_s = tmp_path / "worker-tmp", tmp_path / "template-tmp"
    mine.mkdir()
    template_s.mkdir()
    code = (
        "import os, tempfile\n"
        "from discovery_harness_workers.zygote import refresh_after_fork\n"
        f"os.environ['TMPDIR'] = {str(template_s)!r}; tempfile.gettempdir()\n"
        f"os.environ['TMPDIR'] = {str(mine)!r}\n"
        "before = tempfile.gettempdir(); refresh_after_fork()\n"
        "print(before, tempfile.gettempdir())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.split() == [str(template_s), str(mine)], result.stderr[-2000:]


LEAKS_A_VARIABLE = """
import os

def test_a_library_sets_a_variable():
    os.environ["HARNESS_TEST_LEAKED"] = "1"  # as torch does with TORCHINDUCTOR_CACHE_DIR

def test_the_next_test_sees_the_environment_it_started_with():
    assert "HARNESS_TEST_LEAKED" not in os.environ
"""


def test_what_a_test_leaves_in_the_environment_ends_with_it(tmp_path, inner_pytest):
    """Workers inherit os.environ and must match the template: a variable one test's library
    set must not reach workers started by the tests after it."""
    module = tmp_path / "test_leaks.py"
    module.write_text(LEAKS_A_VARIABLE)
    # A module of the harness's own suite (in another suite only the harness's items are kept).
    suite = ("-o", "discovery_harness_suite=true")
    result = inner_pytest("-q", *suite, "--rootdir", str(ROOT), str(module))
    assert result.returncode == 0 and "2 passed" in result.stdout, result.stdout[-3000:]
