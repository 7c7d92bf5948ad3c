"""The pytest plugin: options, markers, session infrastructure, the `deploy` fixture, reports.

Registered through the `pytest11` entry point `discovery_harness.plugin` wherever the harness is
installed, and inert until asked for (plugin.scope): then any test can ask for `deploy` and
get a topology running against real etcd, NATS, the real frontend and real dynamo.sglang
workers. Its rooms: `scope` (which items are the harness's, and when it is asked for),
`options` (the harness's pytest options and their checks), `session` (markers, the tier, the
run's first lines, usage checks before anything starts), `parallel` (how many xdist workers
`-n auto` starts), `shared_template` (one worker template for an xdist run), `parametrize`
(scenarios per tier: the API `scenarios/` imports), `fixtures` (infra, observer, models,
template, session), `deploy` (the deploy fixtures), `foreign` (a catalogue topology for
another suite's test); the run report is `discovery_harness.report.pytest_run`.
"""

from __future__ import annotations

from typing import Any

pytest_plugins = [
    "discovery_harness.plugin.options",
    "discovery_harness.plugin.session",
    "discovery_harness.plugin.parallel",
    "discovery_harness.plugin.parametrize",
    "discovery_harness.plugin.fixtures",
    "discovery_harness.plugin.deploy",
    "discovery_harness.plugin.foreign",
]

__all__ = ["parametrize_scenarios", "role_param", "topology_param"]


def __getattr__(name: str) -> Any:
    """The API the scenarios import, loaded on first use: pytest imports the plugin's modules
    itself (pytest_plugins above), and would not rewrite one imported before it."""
    if name in __all__:
        from discovery_harness.plugin import parametrize

        return getattr(parametrize, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
