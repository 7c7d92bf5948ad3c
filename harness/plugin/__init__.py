"""The pytest plugin: options, markers, session infrastructure, the `deploy` fixture, reports.

Registered through the `pytest11` entry point (and loaded by the project's conftest), so any
test can ask for `deploy` and get a topology running against real etcd, NATS, the real
frontend and real dynamo.sglang workers. Its rooms: `options` (the harness's pytest options
and their checks), `session` (markers, the tier, the run's first lines, usage checks before
anything starts), `parametrize` (scenarios per tier: the API `scenarios/` imports),
`fixtures` (infra, observer, models, template, session), `deploy` (the deploy fixtures);
the run report is `discovery_harness.report.pytest_run`.
"""

from discovery_harness.plugin.parametrize import parametrize_scenarios, topology_param

pytest_plugins = [
    "discovery_harness.plugin.options",
    "discovery_harness.plugin.session",
    "discovery_harness.plugin.parametrize",
    "discovery_harness.plugin.fixtures",
    "discovery_harness.plugin.deploy",
]

__all__ = ["parametrize_scenarios", "topology_param"]
