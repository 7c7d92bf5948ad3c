"""The shape of the code, checked on every run: the import-linter contracts in pyproject.toml
(harness in layers, `harness` never importing `scenarios`, `workers/` never importing the
harness) and the size of each harness module."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
MOST_LINES = 400
INSTALLED_AS = {
    "harness": "discovery_harness",
    "workers": "discovery_harness_workers",
    "scenarios": "discovery_harness_scenarios",
}


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
    )


@pytest.mark.process
def test_the_import_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.process
def test_an_import_from_a_lower_layer_upwards_breaks_the_contract(tmp_path: Path) -> None:
    """The contracts can fail: a copy of the tree where the model layer imports the
    deployment is refused, naming both modules."""
    for folder, name in INSTALLED_AS.items():  # each folder under its import name
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / folder, tmp_path / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    violating = tmp_path / "discovery_harness" / "model" / "upwards.py"
    violating.write_text("import discovery_harness.deployment\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "discovery_harness.model.upwards -> discovery_harness.deployment" in result.stdout


def test_no_harness_module_is_a_hub() -> None:
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "harness").rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MOST_LINES
    }
    assert not too_long, f"harness modules over {MOST_LINES} lines: {too_long}"


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every circle of imports (each strongly connected set of modules, sorted), whatever
    the import's form: a `TYPE_CHECKING` import or one inside a function counts too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return sorted(circles)


def imports_of_own_package(graph: grimp.ImportGraph) -> list[str]:
    """Modules that import a package they live in (its `__init__`), e.g. a module of
    discovery_harness.deployment doing `from discovery_harness.deployment import Deployment`."""
    return sorted(
        f"{module} -> {package}"
        for module in graph.modules
        for package in graph.modules
        if module.startswith(package + ".")
        and graph.direct_import_exists(importer=module, imported=package)
    )


def _graph(*packages: str) -> grimp.ImportGraph:
    return grimp.build_graph(*packages, cache_dir=None)


@pytest.fixture(scope="module")
def project_graph() -> grimp.ImportGraph:
    return _graph("harness", "workers", "scenarios", "bench")


def test_no_import_circle_anywhere(project_graph: grimp.ImportGraph) -> None:
    assert import_cycles(project_graph) == []


def test_no_module_imports_its_own_package(project_graph: grimp.ImportGraph) -> None:
    assert imports_of_own_package(project_graph) == []


def test_a_circle_and_an_own_package_import_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks can fail: a circle hidden under TYPE_CHECKING, and a module importing its
    package's __init__, are both named."""
    package = tmp_path / "circle_probe"
    package.mkdir()
    (package / "__init__.py").write_text("from circle_probe.a import A\n")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circle_probe.b import B\n"
        "class A: ...\n"
    )
    (package / "b.py").write_text("from circle_probe.a import A\nclass B(A): ...\n")
    (package / "c.py").write_text("from circle_probe import A\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = _graph("circle_probe")
    assert import_cycles(graph) == [["circle_probe.a", "circle_probe.b"]]
    assert imports_of_own_package(graph) == ["circle_probe.c -> circle_probe"]


def test_the_type_checker_catches_a_mixin_reading_what_it_never_declares(tmp_path: Path) -> None:
    """The project's mypy settings find the shape the old Deployment mixins had: a method
    reading an attribute its class never declares (annotated or not)."""
    from mypy import api

    (tmp_path / "mixin_probe.py").write_text(
        "class Launching:\n"
        "    def start(self) -> None:\n"
        "        print(self.topology)\n"
        "    def stop(self):\n"
        "        print(self.session)\n"
    )
    out, _, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--no-incremental",
            str(tmp_path / "mixin_probe.py"),
        ]
    )
    assert status == 1, out
    assert '"Launching" has no attribute "topology"' in out
    assert '"Launching" has no attribute "session"' in out  # an unannotated method too
