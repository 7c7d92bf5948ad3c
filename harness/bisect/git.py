"""git for the bisect: a worktree of its own (the user's checkout is never touched: its HEAD,
index and work tree stay as found) and `git bisect` driven one mark at a time."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

OLD, NEW, SKIP = "old", "new", "skip"
_FIRST = re.compile(r"^([0-9a-f]{40}) is the first new commit", re.MULTILINE)
_ONLY_SKIPPED = "There are only 'skip'ped commits left to test."


class BisectError(ValueError):
    """The bisect cannot start (no repository, an unknown or unordered commit)."""


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise BisectError(f"git {' '.join(args)} in {repo}: {done.stderr.strip()}")
    return done


def resolve(repo: Path, rev: str) -> str:
    done = git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
    if done.returncode != 0:
        raise BisectError(f"{rev}: no such commit in {repo}")
    return done.stdout.strip()


@dataclass(frozen=True)
class Commit:
    hash: str
    subject: str
    date: str  # author date, ISO 8601

    @property
    def short(self) -> str:
        return self.hash[:12]

    def describe(self) -> str:
        return f"{self.short} {self.subject!r} ({self.date})"


def commit(repo: Path, rev: str) -> Commit:
    found = git(repo, "log", "-1", "--format=%H%x00%s%x00%aI", rev).stdout.strip()
    hash_, subject, date = found.split("\x00")
    return Commit(hash_, subject, date)


def check_order(repo: Path, old: str, new: str) -> int:
    """OLD must be an ancestor of NEW; returns the number of commits between them."""
    if git(repo, "merge-base", "--is-ancestor", old, new, check=False).returncode != 0:
        raise BisectError(f"{old[:12]} is not an ancestor of {new[:12]}: give OLD first")
    return int(git(repo, "rev-list", "--count", f"{old}..{new}").stdout.strip()) - 1


@contextmanager
def worktree(repo: Path, rev: str) -> Iterator[Path]:
    """A detached worktree of `repo` at `rev`, in a temp folder; removed at the end (an
    exception or Ctrl-C included), its bisect state with it."""
    holder = Path(tempfile.mkdtemp(prefix="harness-bisect-"))
    path = holder / "checkout"
    git(repo, "worktree", "add", "--detach", "-q", str(path), rev)
    try:
        yield path
    finally:
        with suppress(BisectError):
            git(path, "bisect", "reset", "-q", check=False)
            git(repo, "worktree", "remove", "--force", str(path), check=False)
            git(repo, "worktree", "prune", check=False)
        shutil.rmtree(holder, ignore_errors=True)


def checkout(path: Path, rev: str) -> None:
    git(path, "checkout", "-q", "--detach", rev)


@dataclass(frozen=True)
class Step:
    """Where the bisect stands after a mark: done (first), ambiguous (candidates), or the
    next commit to judge (HEAD of the worktree)."""

    first: str | None = None
    candidates: tuple[str, ...] = ()
    next: str | None = None


def _step(path: Path, done: subprocess.CompletedProcess[str]) -> Step:
    text = done.stdout + done.stderr
    found = _FIRST.search(text)
    if found:
        return Step(first=found.group(1))
    if _ONLY_SKIPPED in text:
        hashes = re.findall(r"^([0-9a-f]{40})$", text, re.MULTILINE)
        return Step(candidates=tuple(hashes))
    if done.returncode != 0:
        raise BisectError(f"git bisect: {text.strip()}")
    return Step(next=git(path, "rev-parse", "HEAD").stdout.strip())


def start(path: Path, old: str, new: str) -> Step:
    """`git bisect start` with OLD and NEW marked (terms old/new: a regression or a fix)."""
    return _step(
        path,
        git(path, "bisect", "start", "--term-old=old", "--term-new=new", new, old, check=False),
    )


def mark(path: Path, term: str) -> Step:
    return _step(path, git(path, "bisect", term, check=False))


def log(path: Path) -> str:
    return git(path, "bisect", "log", check=False).stdout
