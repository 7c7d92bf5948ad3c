"""The type checker (mypy) over the harness's import names.

The folders harness/ and workers/ are imported as discovery_harness and
discovery_harness_workers (setup.py maps each folder to its name). mypy has no such mapping:
it checks them through links named by the import names, in build/typecheck/ (its
`mypy_path`); its settings are [tool.mypy] in pyproject.toml.
Run: .venv/bin/python ci/typecheck.py [mypy options]
"""

from __future__ import annotations

import sys
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent
CHECKED = {"harness": "discovery_harness", "workers": "discovery_harness_workers"}


def link_tree(root: Path = ROOT) -> Path:
    """build/typecheck/<import name> -> <folder>, made once."""
    tree = root / "build" / "typecheck"
    tree.mkdir(parents=True, exist_ok=True)
    for folder, name in CHECKED.items():
        link = tree / name
        if not link.is_symlink():
            link.symlink_to(root / folder, target_is_directory=True)
    return tree


def main(extra: list[str]) -> int:
    link_tree()
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), *extra])
    sys.stdout.write(out)
    sys.stderr.write(err)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
