"""The checkout's pytest set-up.

The harness's plugin comes from its installed `pytest11` entry point (ci/setup.sh installs the
checkout, editable). scenarios/ is the installed `discovery_harness_scenarios` package: pytest,
collecting scenarios/test_x.py from here, imports it as `scenarios.test_x`, so `scenarios` is
bound to that same package object, and no file of it is imported twice under two names
(`pytest --pyargs discovery_harness_scenarios` from an install needs none of this).

`pytester` (pytest's own) runs inner pytest sessions in this process for the harness's tests
(tests/inner_pytest.py): a usage error or a selection checked without a new interpreter.
"""

import gc
import sys

import pytest

import discovery_harness_scenarios

sys.modules.setdefault("scenarios", discovery_harness_scenarios)

pytest_plugins = ["pytester"]


_OUTERMOST: list[pytest.Config] = []  # this session's, not a pytester session's inside it


def pytest_configure(config: pytest.Config) -> None:
    if not _OUTERMOST:
        _OUTERMOST.append(config)


@pytest.hookimpl(trylast=True)  # after the test's fixtures are finalized
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """What a finished test left alive leaves the garbage collector's sight, after one
    collection of what it left as garbage: the suite imports much as it runs (sglang's parser,
    transformers for the tiny models, pytester's inner sessions) and each full collection
    scanned all of it again (~5 s of CPU in the README's run, measured with gc.callbacks).
    Only in the outermost session: an inner one's objects are left to the collector."""
    if item.config is _OUTERMOST[0]:
        gc.collect()
        gc.freeze()
