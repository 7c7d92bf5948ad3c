"""The CPU stack laid out as the runtime image holds the GPU stack: a site-packages folder with
ai-dynamo, sglang, torch and what they depend on (nothing of the harness's own libraries),
made of hard links into this machine's venv (no copy, seconds), cached by the venv's list of
distributions. Prints the folder. Usage: python ci/rehearsal/stack.py SITE_PACKAGES CACHE_DIR
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from discovery_harness.runtime.image_stack import closure, installed  # noqa: E402


def build(site: Path, cache: Path) -> Path:
    dists = installed([str(site)])
    key = hashlib.sha256("\n".join(sorted(f"{n}=={d.version}" for n, d in dists.items())).encode())
    target = cache / f"stack-{key.hexdigest()[:12]}"
    if target.is_dir():
        return target
    keep = closure(dists=dists)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-al", str(site), str(partial)], check=True)
    for name, dist in dists.items():
        if name in keep:
            continue
        for file in dist.files or ():
            path = partial / file
            if path.is_file() or path.is_symlink():
                path.unlink()
    for leftover in [p for p in partial.glob("*.pth")]:  # an editable install's path hook
        if not any(leftover.name in str(f) for n in keep for f in dists[n].files or ()):
            leftover.unlink()
    for folder in sorted(partial.rglob("*"), key=lambda p: -len(p.parts)):
        if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
            folder.rmdir()
    os.replace(partial, target)
    return target


if __name__ == "__main__":
    print(build(Path(sys.argv[1]).resolve(), Path(sys.argv[2])))
