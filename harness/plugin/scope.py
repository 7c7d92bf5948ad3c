"""Which items are the harness's, and whether the harness is in use at all.

The plugin is loaded wherever the harness is installed (its `pytest11` entry point), Dynamo's
own test image included, so it must leave every other suite as it found it, as pytest-django
touches nothing until a test asks for `db`. The harness is *asked for* when:

- the suite says it is the harness's own (ini `discovery_harness_suite = true`, the checkout);
- the command line names the harness's scenarios (`pytest --pyargs discovery_harness_scenarios`,
  a path inside that package) or gives one of the harness's options;
- a collected item is the harness's: it lives in the scenarios package, requests one of the
  harness's fixtures (`deploy`, `discovery_deployment`, ...) or carries the
  `discovery_topology` marker.

Until then nothing happens: no tier is chosen, nothing is printed, no GPU session, no reports,
no signal handlers. Once asked, what the harness does to items (deselecting its nightly and
self-test items, skipping CPU-tier items on the GPU tier, restoring os.environ after each test,
reporting) applies to its own items only, each marked `discovery_harness`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from discovery_harness.common import locations

SUITE_INI = "discovery_harness_suite"
ITEM_MARKER = "discovery_harness"  # on every item of the harness's (its reports carry it)
TOPOLOGY_MARKER = "discovery_topology"
FIXTURES = frozenset(
    {
        "deploy",
        "isolated_deploy",
        "isolated_infra",
        "harness_session",
        "worker_template",
        "discovery_observer",
        "infra_endpoints",
        "discovery_deployment",
    }
)
OWN_MARKERS = {
    ITEM_MARKER: "an item of the discovery harness's (set by the harness itself)",
    f"{TOPOLOGY_MARKER}(name, **options)": "deploy this catalogue topology for the test "
    "(the discovery_deployment fixture); judged by the harness's verdict at teardown",
}


def add_ini(parser: pytest.Parser) -> None:
    parser.addini(
        SUITE_INI,
        type="bool",
        default=False,
        help="every item of this suite is the discovery harness's (its own checkout)",
    )


def whole_suite(config: pytest.Config) -> bool:
    return bool(config.getini(SUITE_INI))


def asked_by_command_line(config: pytest.Config, own_options: set[str]) -> bool:
    """The suite is the harness's, or its scenarios or options are on the command line."""
    if whole_suite(config):
        return True
    args = config.invocation_params.args
    if any(arg.split("=", 1)[0] in own_options for arg in args):
        return True
    return any(_names_the_scenarios(arg) for arg in config.args)


def _names_the_scenarios(arg: str) -> bool:
    name = arg.split("::", 1)[0]
    if name == locations.SCENARIOS_PACKAGE or name.startswith(locations.SCENARIOS_PACKAGE + "."):
        return True  # --pyargs
    try:
        scenarios = locations.package_dir(locations.SCENARIOS_PACKAGE).resolve()
    except ModuleNotFoundError:
        return False
    path = Path(name).resolve()
    return path == scenarios or scenarios in path.parents


def owns(item: pytest.Item) -> bool:
    """Whether this item is the harness's (see the module's docstring)."""
    if whole_suite(item.config) or item.get_closest_marker(TOPOLOGY_MARKER) is not None:
        return True
    if FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    return _names_the_scenarios(str(item.path))


def is_marked_own(item: pytest.Item) -> bool:
    """After collection: whether the harness took this item as its own."""
    return item.get_closest_marker(ITEM_MARKER) is not None
