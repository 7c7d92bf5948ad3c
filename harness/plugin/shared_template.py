"""One worker template for a whole xdist run, not one per xdist worker.

The template's imports cost ~7 s of CPU (torch, sglang, dynamo.sglang); under `-n 3` on two
cores three of them at once held every core for ~10 s at the start of the README's run. The
xdist controller starts one as soon as the harness is asked for (its imports overlap the
workers' own start and collection) and hands its socket to each worker; each worker's session
joins it as a guest (spawn.Zygote.join) and forks its workers there. The template holds
nothing of one session's (runtime.launch.template_env): each worker gets its own environment
whole, and the frozen-variable rule still refuses a worker that differs in what it read.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from discovery_harness.deployment import session_setup
from discovery_harness.runtime import spawn

WORKERINPUT_KEY = "discovery_harness_template"
PLUGIN_NAME = "discovery-harness-run-template"


class RunTemplate:
    """The controller's: the run's template, told to each xdist worker as it is set up."""

    def __init__(self, template: spawn.Zygote, stack: contextlib.ExitStack) -> None:
        self.template = template
        self._stack = stack

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = {
            "address": str(self.template.address),
            "env": self.template.env,
            "log": str(self.template.log_path),
            "pid": self.template.pid,
        }

    def pytest_unconfigure(self) -> None:
        self._stack.close()


def start_for_workers(config: pytest.Config) -> None:
    """In the controller of an xdist run: start the run's template for its workers to join."""
    factory = getattr(config, "_tmp_path_factory", None)  # what xdist gives its workers from
    option = config.option
    distributed = getattr(option, "dist", "no") != "no" and getattr(option, "tx", None)
    if hasattr(config, "workerinput") or not distributed or factory is None:
        return
    if config.option.collectonly:
        return  # a listing starts nothing
    stack = contextlib.ExitStack()
    try:
        workdir = factory.mktemp("harness-template")
        scratch = session_setup.scratch_dir(stack)
        template = session_setup.start_template(stack, workdir, scratch)
    except BaseException:
        stack.close()
        raise
    config.pluginmanager.register(RunTemplate(template, stack), PLUGIN_NAME)


def joined(config: pytest.Config, cwd: Path) -> spawn.Zygote | None:
    """In an xdist worker whose controller started the run's template: a guest of it."""
    given = getattr(config, "workerinput", {}).get(WORKERINPUT_KEY)
    if given is None:
        return None
    return spawn.Zygote.join(
        Path(given["address"]), dict(given["env"]), Path(given["log"]), int(given["pid"]), cwd
    )
