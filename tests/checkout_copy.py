"""A copy of a checkout for a test to change: the files git knows, nothing else.

A rehearsal that copies the whole folder takes whatever the checkout holds besides its
files: .venv/, build/, every release environment in .venvs/ (gigabytes each), and follows
their links (lib64 -> lib: each environment twice). This copies the tracked files and the
untracked ones git does not ignore (as a working tree's change would be), links as links,
and says how much it wrote.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def copy_checkout(source: Path, target: Path) -> int:
    """Copy the files git knows from source to target; returns the bytes written."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source,
        capture_output=True,
        check=True,
    ).stdout.decode()
    written = 0
    for name in sorted(set(filter(None, listed.split("\0")))):
        origin = source / name
        copy = target / name
        if origin.is_symlink():
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.symlink_to(os.readlink(origin))
        elif origin.is_file():  # a file deleted in the working tree, or a submodule: neither
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, copy)
            written += copy.stat().st_size
    return written


def size_of(folder: Path) -> int:
    """Bytes of the files under folder, links not followed."""
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
