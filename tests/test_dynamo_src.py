"""--dynamo-src and bisect, without a Dynamo repository: checkout-shaped trees made from the
installed ai-dynamo wheel's files (tests/dynamo_trees.py).

Default run: the environment choice, the checkout's state, the stability rule, the bisect's
git driving (an oracle that reads the tree), the import probe refusing a misfit, and one
deployment of a tree whose worker skips registration (the checkout's code is what runs).
Nightly: the multimodal #4486 shape through `conformance --dynamo-src`, and a bisect of a
generated history with the real oracle.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import pytest

from discovery_harness.bisect import command as bisect_command
from discovery_harness.bisect import git as bisect_git
from discovery_harness.bisect.git import NEW, OLD, SKIP, Commit
from discovery_harness.bisect.oracle import MISFIT, Judgement, Oracle
from discovery_harness.history.stability import (
    CONFORMANT,
    DETERMINISTIC,
    INTERMITTENT,
    Stable,
)
from discovery_harness.runtime import dynamo_env, dynamo_fit, dynamo_src
from discovery_harness.runtime.dynamo_fit import Candidate
from discovery_harness.runtime.dynamo_src import Checkout
from tests import dynamo_trees
from tests.inner_pytest import run_cli, run_pytest

OWN = dynamo_env.own()


def _env(version: str, own: bool = False) -> dynamo_env.DynamoEnv:
    return dynamo_env.DynamoEnv(f"/envs/{version}/bin/python", version, own)


def _checkout(version: str | None, pin: str | None = "0.5.21") -> Checkout:
    return Checkout(Path("/src"), version, pin, None, None, None)


CANDIDATES = [
    Candidate(_env("1.6.1", own=True), "0.5.21"),
    Candidate(_env("1.5.1"), "0.5.18"),
    Candidate(_env("0.7.1"), "0.5.6"),
    Candidate(_env("0.7.0"), "0.5.5"),
]


def test_the_environment_of_the_checkouts_minor_release_is_chosen_pin_first():
    choice = dynamo_fit.choose(_checkout("0.7.0", "0.5.5"), CANDIDATES)
    assert choice.env.version == "0.7.0"  # the pin decides within the minor
    assert "same minor release" in choice.reason and "sglang 0.5.5 as pinned" in choice.reason
    newest = dynamo_fit.choose(_checkout("0.7.3", "0.5.9"), CANDIDATES)
    assert newest.env.version == "0.7.1"  # no pin matches: the newest patch
    assert "the checkout pins 0.5.9" in newest.reason


def test_without_an_environment_of_its_minor_the_nearest_is_chosen_and_the_reason_says_so():
    choice = dynamo_fit.choose(_checkout("1.7.0", "0.5.22"), CANDIDATES)
    assert choice.env.version == "1.6.1"
    assert "no environment of the checkout's minor release (1.7.0" in choice.reason
    assert "0.7.0, 0.7.1, 1.5.1, 1.6.1" in choice.reason and "--dynamo-env" in choice.reason


@pytest.mark.process
def test_dynamo_env_overrides_the_choice(tmp_path: Path):
    tree = dynamo_trees.make_tree(tmp_path / "tree", ("sglang",))
    checkout = dynamo_src.read(tree)
    assert dynamo_fit.choose_env(checkout, OWN.python).reason == "given by --dynamo-env"


@pytest.mark.process
def test_a_checkout_says_its_pins_commit_and_whether_it_is_dirty(tmp_path: Path):
    tree = dynamo_trees.make_tree(tmp_path / "tree", ("sglang",))
    checkout = dynamo_src.read(tree)
    assert (checkout.version, checkout.sglang_pin) == (OWN.version, dynamo_trees.sglang_pin())
    assert checkout.commit is None and "not a git work tree" in checkout.describe()
    (tree / ".gitignore").write_text("__pycache__/\n")
    dynamo_trees.git(tree, "init", "-q")
    head = dynamo_trees.commit_all(tree, "the wheel files")
    clean = dynamo_src.read(tree)
    assert clean.commit == head and clean.dirty is False
    assert f"commit {head[:12]} 'the wheel files', clean" in clean.describe()
    dynamo_trees.skip_registration(tree)
    assert dynamo_src.read(tree).dirty is True


def test_not_a_checkout_is_refused(tmp_path: Path):
    with pytest.raises(dynamo_src.CheckoutError, match="no components/src/dynamo there"):
        dynamo_src.read(tmp_path)


def test_the_checkouts_src_goes_first_on_every_dynamo_processs_path(monkeypatch, tmp_path):
    from discovery_harness.runtime.launch import template_env

    monkeypatch.setenv(dynamo_src.ENV_VARIABLE, str(tmp_path))
    src = str(tmp_path / "components" / "src")
    env = dynamo_src.with_checkout({"PYTHONPATH": "/hook:/workers"})
    assert env["PYTHONPATH"].split(":") == [src, "/hook", "/workers"]
    template = template_env(tmp_path / "hf", tmp_path / "tmp")
    assert template["PYTHONPATH"].split(":")[0] == src  # the template pre-imports from it
    monkeypatch.delenv(dynamo_src.ENV_VARIABLE)
    assert dynamo_src.with_checkout({"A": "1"}) == {"A": "1"}


@pytest.mark.process
def test_a_keyword_the_runtime_rejects_in_a_worker_log_is_a_misfit(monkeypatch, tmp_path):
    log = (
        "2026-12-05T07:00:00Z ERROR register: Failed to register with runtime config: "
        "register_model() got an unexpected keyword argument 'needs'\n"
    )
    assert dynamo_src.misfit_in_log(log) is None  # an installed release: its pair fits
    tree = dynamo_trees.make_tree(tmp_path / "t", ("sglang",))
    monkeypatch.setenv(dynamo_src.ENV_VARIABLE, str(tree))
    assert dynamo_src.misfit_in_log(log) == (
        "register_model() got an unexpected keyword argument 'needs'"
    )
    message = dynamo_src.runtime_misfit("worker", dynamo_src.misfit_in_log(log) or "")
    assert message.startswith("checkout and runtime do not fit: worker 'worker'")
    assert f"ai-dynamo {OWN.version}" in message


# --- bisect over a generated history --------------------------------------------------------

MISFIT_AT, BREAKS_AT, COMMITS = 5, 8, 12  # git's first midpoint of c0..c11 is c5


def _history(root: Path, only: tuple[str, ...] = ("sglang",)) -> list[str]:
    """c0..c11 of a checkout-shaped tree: c5 imports a name the runtime lacks (c6 drops it
    again), c8 makes the multimodal worker skip its registration (#4486's shape). `only`:
    the wheel's folders it holds (all of them: `()`)."""
    dynamo_trees.make_tree(root, only)
    (root / ".gitignore").write_text("__pycache__/\n")
    dynamo_trees.git(root, "init", "-q")
    main = root / dynamo_src.SRC / "dynamo" / "sglang" / "main.py"
    original = main.read_text()
    hashes = []
    for n in range(COMMITS):
        subject = f"c{n}: routine change"
        if n == MISFIT_AT:
            dynamo_trees.import_missing_name(root)
            subject = f"c{n}: use a binding of the next runtime"
        elif n == MISFIT_AT + 1:
            main.write_text(original)
        if n == BREAKS_AT:
            dynamo_trees.skip_registration(root)
            subject = f"c{n}: tidy the multimodal worker's start"
        hashes.append(dynamo_trees.commit_all(root, subject))
    return hashes


def _fake_judge(tree: Path):
    """An oracle that reads the tree instead of deploying it (the git driving under test)."""

    def judge(self: Oracle, commit: Commit) -> Judgement:
        src = tree / dynamo_src.SRC / "dynamo" / "sglang"
        if "NoSuchThing" in (src / "main.py").read_text():
            return Judgement(commit, MISFIT, 0.0, reason="checkout and runtime do not fit: x")
        broken = "#4486" in (src / "init_multimodal.py").read_text()
        seen = {"mm-encode-pd: never-registered mm-worker": 2} if broken else {}
        stable = Stable(2 if broken else 1, seen)
        return Judgement(commit, DETERMINISTIC if broken else CONFORMANT, 0.0, stable)

    return judge


def _repo_state(repo: Path) -> tuple[str, str, str, str]:
    return (
        dynamo_trees.git(repo, "rev-parse", "HEAD"),
        dynamo_trees.git(repo, "for-each-ref"),  # no refs/bisect left behind
        dynamo_trees.git(repo, "status", "--porcelain"),
        dynamo_trees.git(repo, "worktree", "list", "--porcelain"),
    )


def _bisect(repo: Path, old: str, new: str, out: Path) -> int:
    """`bisect --dynamo-src REPO OLD NEW --topology mm-encode-pd --out OUT`, in this process."""
    from discovery_harness.model.catalogue import load

    args = argparse.Namespace(
        dynamo_src=str(repo),
        old=old,
        new=new,
        topology=["mm-encode-pd"],
        markers=None,
        dynamo_env=None,
        runs=3,
        intermittent_is_bad=False,
        out=str(out),
    )
    return bisect_command.bisect_command(args, load())


def _fake_judges_in_worktrees(monkeypatch, wrap=None) -> list[Path]:
    """Each bisect worktree judged by the fake judge (optionally wrapped); the trees made, in
    order, so a test can check they are gone."""
    trees: list[Path] = []
    real_worktree = bisect_git.worktree

    def recording_worktree(source: Path, rev: str):
        manager = real_worktree(source, rev)
        path = manager.__enter__()
        trees.append(path)
        judge = _fake_judge(path)
        monkeypatch.setattr(Oracle, "judge", wrap(judge) if wrap else judge)
        return _Entered(manager, path)

    monkeypatch.setattr(bisect_git, "worktree", recording_worktree)
    return trees


@pytest.mark.process
def test_bisect_finds_the_breaking_commit_skips_the_misfit_and_leaves_the_repo(
    tmp_path: Path, monkeypatch, capsys
):
    repo = tmp_path / "dynamo"
    hashes = _history(repo)
    (repo / "notes.txt").write_text("uncommitted work of the developer\n")
    before = _repo_state(repo)
    trees = _fake_judges_in_worktrees(monkeypatch)
    code = _bisect(repo, hashes[0], hashes[-1], tmp_path / "out")
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"REGRESSION: the first commit with NEW's verdict is {hashes[BREAKS_AT]}" in printed
    assert "it introduced: mm-encode-pd: never-registered mm-worker" in printed
    assert f"{hashes[MISFIT_AT][:12]}" in printed and "-> skip (checkout and runtime" in printed
    report = json.loads((tmp_path / "out" / "bisect.json").read_text())
    assert report["first"]["commit"] == hashes[BREAKS_AT] and report["kind"] == "regression"
    page = (tmp_path / "out" / "bisect.html").read_text()
    assert "<h1>Bisect: regression</h1>" in page
    assert f"<td><code>{hashes[BREAKS_AT][:12]}</code></td>" in page
    assert any(s["mark"] == SKIP and s["commit"] == hashes[MISFIT_AT] for s in report["steps"])
    assert _repo_state(repo) == before  # HEAD, status (the uncommitted file), worktrees
    assert trees and not trees[0].exists()


@pytest.mark.process
def test_bisect_names_a_fix_when_the_ends_swap_meaning(tmp_path: Path, monkeypatch, capsys):
    """A history that fixes: OLD fails, NEW is conformant; the first conformant commit."""
    repo = tmp_path / "dynamo"
    dynamo_trees.make_tree(repo, ("sglang",))
    dynamo_trees.skip_registration(repo)
    dynamo_trees.git(repo, "init", "-q")
    hashes = [dynamo_trees.commit_all(repo, "c0: broken")]
    path = repo / dynamo_src.SRC / "dynamo" / "sglang" / "init_multimodal.py"
    fixed_at = 3
    for n in range(1, 6):
        if n == fixed_at:
            path.write_text(path.read_text().replace("#4486", "fixed"))
        hashes.append(dynamo_trees.commit_all(repo, f"c{n}"))
    _fake_judges_in_worktrees(monkeypatch)
    code = _bisect(repo, hashes[0], hashes[-1], tmp_path / "out")
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"FIX: the first commit with NEW's verdict is {hashes[fixed_at]}" in printed
    assert "it removed: mm-encode-pd: never-registered mm-worker" in printed


@pytest.mark.process
def test_bisect_refuses_ends_with_the_same_verdict(tmp_path: Path, monkeypatch, capsys):
    repo = tmp_path / "dynamo"
    hashes = _history(repo)
    _fake_judges_in_worktrees(monkeypatch)
    code = _bisect(repo, hashes[0], hashes[2], tmp_path / "out")
    assert code == 1
    assert "OLD and NEW have the same verdict (conformant" in capsys.readouterr().err


class _Entered:
    """A context manager already entered (the test reads its path before the bisect does)."""

    def __init__(self, manager, path: Path) -> None:
        self.manager, self.path = manager, path

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc) -> None:
        self.manager.__exit__(*exc)


def test_classify_marks_by_which_ends_verdict_a_commit_has():
    commit = Commit("0" * 40, "s", "d")
    bad = Stable(2, {"x: never-registered w": 2})
    old = Judgement(commit, CONFORMANT, 0, Stable(1, {}))
    new = Judgement(commit, DETERMINISTIC, 0, bad)
    flaky = Judgement(commit, INTERMITTENT, 0, Stable(3, {"x: never-registered w": 1}))
    other = Judgement(commit, DETERMINISTIC, 0, Stable(2, {"x: wrong-card w": 2}))
    assert bisect_command.classify(new, old, new, False)[0] == NEW
    assert bisect_command.classify(old, old, new, False)[0] == OLD
    assert bisect_command.classify(flaky, old, new, False) == (
        SKIP,
        "intermittent (--intermittent-is-bad counts it)",
    )
    assert bisect_command.classify(flaky, old, new, True)[0] == NEW
    assert bisect_command.classify(other, old, new, False) == (SKIP, "a verdict neither end has")


# --- with Dynamo's processes ----------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.nightly
@pytest.mark.timeout(300)
def test_a_checkout_that_imports_what_the_runtime_lacks_is_refused_before_any_worker(
    tmp_path: Path,
):
    tree = dynamo_trees.make_tree(tmp_path / "tree")
    dynamo_trees.import_missing_name(tree)
    result = run_pytest(
        "-q",
        "scenarios/test_topologies.py::test_registers_and_serves[aggregated]",
        "--dynamo-src",
        str(tree),
        timeout=240,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 4, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1, output[-3000:]
    assert errors[0].startswith("ERROR: checkout and runtime do not fit: ")
    assert "`NoSuchThing` from dynamo._core" in errors[0]
    assert f"ai-dynamo-runtime {OWN.version}" in errors[0]  # the runtime's version
    assert f"checkout: ai-dynamo {OWN.version} (pyproject.toml)" in errors[0]  # the checkout's
    assert "never-registered" not in output


def _deploy_tree(tree: Path, topology: str, reports: Path, *extra: str) -> tuple[int, str, dict]:
    result = run_pytest(
        "-q",
        f"scenarios/test_topologies.py::test_registers_and_serves[{topology}]",
        "--dynamo-src",
        str(tree),
        f"--report-dir={reports}",
        *extra,
        timeout=280,
    )
    report = json.loads((reports / "report.json").read_text())
    return result.returncode, result.stdout + result.stderr, report


@pytest.mark.e2e
@pytest.mark.timeout(320)
@pytest.mark.parametrize(
    "spawn",
    [
        pytest.param("zygote", marks=pytest.mark.nightly),
        pytest.param("fresh", marks=[pytest.mark.nightly, pytest.mark.long]),
    ],
)
def test_the_checkouts_code_is_what_runs_a_worker_that_skips_registration_there_fails(
    tmp_path: Path, spawn: str
):
    """The tree's init_llm.init_decode no longer registers: the aggregated worker, forked
    from a template that pre-imported the tree (or started fresh), is never-registered;
    nothing installed moved."""
    installed = dynamo_trees.installed_hashes()
    tree = dynamo_trees.make_tree(tmp_path / "tree")
    dynamo_trees.skip_registration(tree, "sglang/init_llm.py", "init_decode")
    code, output, report = _deploy_tree(tree, "aggregated", tmp_path / "reports", "--spawn", spawn)
    assert code == 1, output[-3000:]
    assert f"discovery harness: checkout: {tree}" in output
    assert "checkout import probe: ok" in output and str(tree / "components") in output
    assert "[never-registered] worker 'worker'" in output
    assert report["checkout"]["path"] == str(tree)
    assert dynamo_trees.installed_hashes() == installed


@pytest.mark.e2e
@pytest.mark.nightly
@pytest.mark.long  # the checkout's skipped registration: the zygote case above; #4486: history
@pytest.mark.multimodal
@pytest.mark.timeout(600)
def test_4486_in_a_checkout_fails_never_registered_and_the_clean_tree_is_conformant(
    tmp_path: Path,
):
    """`conformance --dynamo-src TREE --topology mm-encode-pd`: conformant on the wheel's
    own files; never-registered naming mm-worker once its init skips registration."""
    installed = dynamo_trees.installed_hashes()
    tree = dynamo_trees.make_tree(tmp_path / "tree")
    command = ["conformance", "--dynamo-src", str(tree), "--topology", "mm-encode-pd"]
    clean = run_cli(*command, timeout=400)
    assert clean.returncode == 0, (clean.stdout + clean.stderr)[-3000:]
    dynamo_trees.skip_registration(tree)
    broken = run_cli(*command, timeout=400)
    output = broken.stdout + broken.stderr
    assert broken.returncode == 1, output[-3000:]
    assert "[never-registered] worker 'mm-worker'" in output
    assert dynamo_trees.installed_hashes() == installed


@pytest.mark.e2e
@pytest.mark.nightly
@pytest.mark.timeout(320)
def test_a_keyword_the_runtime_rejects_at_registration_is_a_misfit_not_never_registered(
    tmp_path: Path,
):
    """Seen only at run time: dynamo.sglang logs the refused registration and serves on."""
    tree = dynamo_trees.make_tree(tmp_path / "tree")
    dynamo_trees.keyword_the_runtime_lacks(tree)
    code, output, report = _deploy_tree(tree, "aggregated", tmp_path / "reports")
    assert code == 1, output[-3000:]
    assert "[checkout-runtime-misfit] checkout and runtime do not fit: worker 'worker'" in output
    assert "unexpected keyword argument 'harness_next_runtime_keyword'" in output
    assert "[never-registered]" not in output
    kinds = {v["kind"] for d in report["deployments"] for v in d["violations"]}
    assert kinds == {"checkout-runtime-misfit"}


@pytest.mark.e2e
@pytest.mark.nightly
@pytest.mark.long  # ~240 s; the bisect's rules: the tests above, its oracle: the checkout tests
@pytest.mark.multimodal
@pytest.mark.timeout(1800)
def test_bisect_of_a_generated_history_names_the_breaking_commit(tmp_path: Path):
    """The real oracle: each commit deployed through --dynamo-src in a worktree."""
    repo = tmp_path / "dynamo"
    hashes = _history(repo, only=())
    before = _repo_state(repo)
    result = run_cli(
        "bisect",
        "--dynamo-src",
        str(repo),
        hashes[0],
        hashes[-1],
        "--topology",
        "mm-encode-pd",
        "--out",
        str(tmp_path / "out"),
        timeout=1700,
    )
    output = result.stdout + result.stderr
    print(output)
    assert result.returncode == 0, output[-5000:]
    assert f"REGRESSION: the first commit with NEW's verdict is {hashes[BREAKS_AT]}" in output
    assert "it introduced: mm-encode-pd: never-registered mm-worker" in output
    assert "-> skip (checkout and runtime do not fit" in output
    assert _repo_state(repo) == before
    assert subprocess.run(["git", "-C", str(repo), "worktree", "prune", "-n"]).returncode == 0


@pytest.mark.process
def test_ctrl_c_during_a_bisect_removes_its_worktree_and_leaves_the_repo(
    tmp_path: Path, monkeypatch, capsys
):
    repo = tmp_path / "dynamo"
    hashes = _history(repo)
    before = _repo_state(repo)
    judged: list[str] = []

    def interrupting(judge):
        def interrupted(self: Oracle, commit: Commit) -> Judgement:
            judged.append(commit.hash)
            if len(judged) == 3:  # the first step, after both ends
                raise KeyboardInterrupt
            return judge(self, commit)

        return interrupted

    _fake_judges_in_worktrees(monkeypatch, interrupting)
    code = _bisect(repo, hashes[0], hashes[-1], tmp_path / "out")
    assert code == 130
    assert "interrupted; its worktree removed" in capsys.readouterr().out
    assert _repo_state(repo) == before


def test_the_reports_name_the_checkout_and_its_commit():
    from discovery_harness.report import html, markdown
    from discovery_harness.report.model import RunEntry, run_from_dict

    checkout = Checkout(Path("/src/dynamo"), "1.6.1", "0.5.21", "ab" * 20, "fix it", True)
    run = RunEntry("pytest", 0.0, 1.0, OWN.version, "cpu", "process", "zygote", "host")
    run.checkout = checkout.as_dict()
    line = f"checkout /src/dynamo at {'ab' * 6} ('fix it'; dirty) over ai-dynamo {OWN.version}"
    assert f"Dynamo checkout: {line}" in markdown.render(run)
    assert line.replace("'", "&#x27;") in html.render(run)
    assert (
        run_from_dict(json.loads(json.dumps(vars(run), default=vars))).checkout
        == vars(run)["checkout"]
    )
