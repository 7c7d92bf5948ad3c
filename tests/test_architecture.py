"""The shape of the code, checked on every run: the import-linter contracts in pyproject.toml
(harness in layers, `harness` never importing `scenarios`, `workers/` never importing the
harness) and the size of each harness module."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
MOST_LINES = 400


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
    )


def test_the_import_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_import_from_a_lower_layer_upwards_breaks_the_contract(tmp_path: Path) -> None:
    """The contracts can fail: a copy of the tree where the model layer imports the
    deployment is refused, naming both modules."""
    for name in ("harness", "workers", "scenarios"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    violating = tmp_path / "harness" / "model" / "upwards.py"
    violating.write_text("import harness.deployment\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "harness.model.upwards -> harness.deployment" in result.stdout


def test_no_harness_module_is_a_hub() -> None:
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "harness").rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MOST_LINES
    }
    assert not too_long, f"harness modules over {MOST_LINES} lines: {too_long}"
