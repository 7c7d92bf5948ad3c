"""The mode-coverage guard: every start path of the installed dynamo.sglang has a topology.

Registration bugs of the #4486 class live in start paths (each init function registers on its
own). This module reads the installed `dynamo/sglang` sources, without importing them, and
lists every start path:

- each `init_*` call that `main.worker()` dispatches to, with the branch condition that
  selects it (if/elif chains, nested ones included);
- `gateway_child` (a gateway child attaches to its leader's engine) and
  `<init>/gateway_leader` (an init function that hands serving to gateway children);
- `snapshot_restore` and `failover_standby` (snapshot mode and its failover election);
- `<init>/non_leader` (an init function that stops at handle_non_leader_node for node
  rank >= 1).

A path that no catalogue worker declares and that is not exempt (with a reason) is a gap:
a new Dynamo mode cannot slip past the harness unnoticed.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from discovery_harness.model.catalogue import Catalogue

WORKER_FUNCTION = "worker"
GATEWAY_CHILD, SNAPSHOT, FAILOVER = "gateway_child", "snapshot_restore", "failover_standby"
_MARKERS = {  # a call in main.worker() -> the start path it opens
    "build_gateway_engine": GATEWAY_CHILD,
    "prepare_snapshot_engine": SNAPSHOT,
    "elect_and_wake": FAILOVER,
}
_SUFFIXES = {  # a call inside an init function -> the sub-path of that function
    "handle_non_leader_node": "non_leader",
    "serve_via_gateway_children": "gateway_leader",
}


@dataclass(frozen=True)
class StartPath:
    name: str
    where: str  # file and line
    condition: str  # the branch condition that selects it ("" where none)

    def describe(self) -> str:
        when = f" when {self.condition}" if self.condition else ""
        return f"{self.name} ({self.where}{when})"


def sglang_package_dir() -> Path:
    spec = importlib.util.find_spec("dynamo.sglang")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("dynamo.sglang is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def installed_start_paths(package_dir: Path | None = None) -> list[StartPath]:
    package_dir = package_dir or sglang_package_dir()
    main = package_dir / "main.py"
    worker = _function(ast.parse(main.read_text()), WORKER_FUNCTION)
    paths = _dispatch(worker, main.name)
    for call in _calls(worker):
        name = _MARKERS.get(_call_name(call))
        if name and not any(p.name == name for p in paths):
            paths.append(StartPath(name, f"{main.name}:{call.lineno}", ""))
    init_names = {p.name for p in paths}
    for module in sorted(package_dir.glob("*.py")):
        for function in ast.walk(ast.parse(module.read_text())):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if function.name not in init_names:
                continue
            for call in _calls(function):
                suffix = _SUFFIXES.get(_call_name(call))
                name = f"{function.name}/{suffix}" if suffix else None
                if name and not any(p.name == name for p in paths):
                    paths.append(StartPath(name, f"{module.name}:{call.lineno}", ""))
    return paths


def dispatch_conditions(package_dir: Path | None = None) -> list[tuple[str, ast.expr | None]]:
    """main.worker()'s dispatch, in order: (init function, its whole condition or None)."""
    package_dir = package_dir or sglang_package_dir()
    worker = _function(ast.parse((package_dir / "main.py").read_text()), WORKER_FUNCTION)
    found: list[tuple[str, ast.expr | None]] = []
    _collect(worker.body, [], found)
    return found


def gaps(paths: list[StartPath], catalogue: Catalogue) -> list[str]:
    """Installed start paths no worker declares and no exemption names, and declarations
    that name no installed path (stale)."""
    declared = {p for t in catalogue.topologies for w in t.workers for p in w.start_paths}
    exempt = set(catalogue.start_path_exemptions)
    installed = {p.name for p in paths}
    problems = [
        f"start path {p.describe()} has no catalogue topology and no exemption: add a "
        "topology whose worker declares it (WorkerSpec.start_paths), or exempt it with the "
        "reason (START_PATH_EXEMPTIONS)"
        for p in paths
        if p.name not in declared | exempt
    ]
    problems += [
        f"'{name}' is declared or exempt in the catalogue but the installed dynamo.sglang "
        "has no such start path (renamed or removed?)"
        for name in sorted((declared | exempt) - installed)
    ]
    return problems


# -- AST helpers ---------------------------------------------------------------------------
def _function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    raise LookupError(f"no function {name}() in dynamo.sglang's main.py")


def _calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _collect(
    body: list[ast.stmt], conditions: list[ast.expr], found: list[tuple[str, ast.expr | None]]
) -> None:
    """Every awaited init_* call under `body`, with the conjunction of the branch tests
    (and negated earlier tests) that lead to it."""
    for statement in body:
        if isinstance(statement, ast.If):
            _collect(statement.body, [*conditions, statement.test], found)
            negated = ast.copy_location(ast.UnaryOp(ast.Not(), statement.test), statement.test)
            _collect(statement.orelse, [*conditions, negated], found)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Await):
            call = statement.value.value
            if isinstance(call, ast.Call) and _call_name(call).startswith("init_"):
                found.append((_call_name(call), _conjunction(conditions)))


def _conjunction(conditions: list[ast.expr]) -> ast.expr | None:
    """`a and b and ...` as one expression, with source locations (so it can be compiled)."""
    if not conditions:
        return None
    test = conditions[0] if len(conditions) == 1 else ast.BoolOp(ast.And(), list(conditions))
    return ast.fix_missing_locations(ast.Expression(test)).body


def _dispatch(worker: ast.FunctionDef | ast.AsyncFunctionDef, filename: str) -> list[StartPath]:
    found: list[tuple[str, ast.expr | None]] = []
    _collect(worker.body, [], found)
    paths = []
    for name, test in found:
        line = next((c.lineno for c in _calls(worker) if _call_name(c) == name), worker.lineno)
        # The branch's own test reads best; the full conjunction is in dispatch_conditions.
        own = test.values[-1] if isinstance(test, ast.BoolOp) else test
        condition = ast.unparse(own) if own is not None else ""
        paths.append(StartPath(name, f"{filename}:{line}", condition))
    return paths
