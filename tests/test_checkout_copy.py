"""The copy a rehearsal makes of the checkout holds the checkout's files and nothing its
environments left there: its size does not grow with .venvs/."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.checkout_copy import copy_checkout, size_of


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.process
def test_a_copy_holds_the_files_git_knows_and_no_environment(tmp_path):
    repo = tmp_path / "checkout"
    (repo / "harness").mkdir(parents=True)
    (repo / "harness" / "code.py").write_text("print('tracked')\n")
    (repo / ".gitignore").write_text("/.venvs\n/build/\n")
    (repo / "link").symlink_to("harness")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    (repo / "new.py").write_text("print('untracked, not ignored')\n")
    # A release environment as history leaves it: megabytes, and a link to its own lib.
    env = repo / ".venvs" / "dynamo-0.7.1"
    (env / "lib").mkdir(parents=True)
    (env / "lib" / "big.bin").write_bytes(b"\0" * 4_000_000)
    (env / "lib64").symlink_to("lib")
    (repo / "build").mkdir()
    (repo / "build" / "image.tar").write_bytes(b"\0" * 1_000_000)

    copy = tmp_path / "copy"
    written = copy_checkout(repo, copy)

    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*")) == [
        ".gitignore",
        "harness",
        "harness/code.py",
        "link",
        "new.py",
    ]
    assert (copy / "link").is_symlink()
    assert written == size_of(copy) < 1_000
