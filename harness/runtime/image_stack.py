"""The runtime image's own stack: ai-dynamo, sglang, torch and everything they depend on, as
installed in a Python environment. The GPU job installs the harness's libraries beside it
and must never replace any of them (a different protobuf or filelock under the workers would
be a different Dynamo). Standard library only: it runs in the image's Python before install.

    python -m discovery_harness.runtime.image_stack constraints
        name==version of every stack package
    python -m discovery_harness.runtime.image_stack touched VENV_SITE_PACKAGES
        the stack packages installed there
    python -m discovery_harness.runtime.image_stack requirements REQUIREMENTS_FILE
        the file's requirements, a stack package's pin dropped (the image's version stays)
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
from collections.abc import Iterable

ROOTS = ("ai-dynamo", "ai-dynamo-runtime", "sglang", "torch")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(paths: list[str] | None = None) -> dict[str, importlib.metadata.Distribution]:
    """Distributions by canonical name (the first on the path wins, as for imports)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    dists = (
        importlib.metadata.distributions(path=paths)
        if paths
        else importlib.metadata.distributions()
    )
    for dist in dists:
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonical(name), dist)
    return found


def closure(
    roots: Iterable[str] = ROOTS, dists: dict[str, importlib.metadata.Distribution] | None = None
) -> dict[str, str]:
    """name -> version of the roots and every installed distribution they require (extras'
    requirements aside), transitively."""
    dists = installed() if dists is None else dists
    stack: dict[str, str] = {}
    todo = [canonical(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in stack or name not in dists:
            continue
        stack[name] = dists[name].version
        for requirement in dists[name].requires or ():
            if "extra ==" in requirement.replace('"', " ").replace("'", " "):
                continue
            match = _NAME.match(requirement)
            if match:
                todo.append(canonical(match.group(1)))
    return stack


def yielding(requirements: list[str], stack: dict[str, str]) -> list[str]:
    """The harness's requirement lines, each one naming a package of the stack reduced to its
    name: the image's version of it is the one (constraints pin it), whatever the harness's
    own pin says (Dynamo's image may hold a newer httpx or filelock than the harness pins)."""
    kept = []
    for line in requirements:
        text = line.split("#", 1)[0].strip()
        match = _NAME.match(text)
        if not text or match is None:
            continue
        name = canonical(match.group(1).split("[")[0])
        kept.append(match.group(1) if name in stack else text)
    return kept


def main(argv: list[str]) -> int:
    if argv[:1] == ["constraints"]:
        for name, version in sorted(closure().items()):
            print(f"{name}=={version}")
        return 0
    if argv[:1] == ["touched"] and len(argv) == 2:
        stack = closure()
        shadowing = sorted(set(installed([argv[1]])) & set(stack))
        for name in shadowing:
            print(f"{name} (the image has {stack[name]})")
        return 1 if shadowing else 0
    if argv[:1] == ["requirements"] and len(argv) == 2:
        with open(argv[1]) as lines:
            print("\n".join(yielding(lines.read().splitlines(), closure())))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
