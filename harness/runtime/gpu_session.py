"""A GPU-tier session that can test nothing fails; it never passes green with nothing run.

`--tier gpu` where no GPU is visible, where the driver is too old for the CUDA build, or with
more xdist workers than GPUs, used to skip every scenario ("needs 1 GPU(s); this run has 0")
and exit 0: a regression guard that guards nothing. Those are usage errors before anything
starts. A layout that needs more GPUs or more GPU memory than this run's share is skipped with
the reason and listed in the summary; a session in which nothing ran at all exits non-zero
with one message saying why.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping

import pytest

from discovery_harness.model.topology import Scenario
from discovery_harness.runtime import gpus
from discovery_harness.runtime.gpu_probe import GpuProbe
from discovery_harness.runtime.tier import TIERS

# Each GPU's total memory (GiB) where nvidia-smi cannot tell, or to hold a run to smaller GPUs.
MEMORY_VARIABLE = "HARNESS_GPU_MEMORY_GIB"
NOTHING_RAN = pytest.ExitCode.TESTS_FAILED


def usage_problem(config: pytest.Config, found: GpuProbe, requested: str) -> str | None:
    """Why `--tier gpu` cannot run anything on this machine (one line), or None, from the same
    probe the session takes its GPUs from. Listing (`--collect-only`) needs no GPU; xdist
    workers leave the check to their controller."""
    asked = TIERS.get(requested)  # None for auto: it never picks an absent GPU
    if asked is None or not asked.gpus or config.option.collectonly:
        return None
    if hasattr(config, "workerinput"):
        return None
    if not found.visible:
        return (
            "--tier gpu: no GPU is visible here (CUDA_VISIBLE_DEVICES is "
            f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')!r}, nvidia-smi lists none): "
            "no GPU-tier scenario can run; run on a GPU machine or use --tier cpu"
        )
    if found.problem:
        return f"--tier gpu: {found.problem}"
    visible = found.usable
    workers = getattr(config.option, "numprocesses", None)
    if isinstance(workers, int) and workers > len(visible):
        return (
            f"--tier gpu: -n {workers} is more xdist workers than the {len(visible)} visible "
            f"GPU(s) ({','.join(visible)}): each worker needs a GPU of its own; use -n "
            f"{len(visible)} or fewer"
        )
    return None


def start(config: pytest.Config, share: tuple[str, ...]) -> tuple:
    """A GPU-tier session: its GPUs' memory (for the layouts' fit), and, on the process that
    reports (not an xdist worker), the guard that fails a session where nothing ran."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(GpuSessionGuard(), "harness-gpu-session")
    return share_memory(share)


def share_memory(share: tuple[str, ...], env: Mapping[str, str] | None = None) -> tuple:
    """The total memory (GiB) of each GPU of this run's share, None where unknown."""
    env = os.environ if env is None else env
    if env.get(MEMORY_VARIABLE):
        return (float(env[MEMORY_VARIABLE]),) * len(share)
    known = gpus.total_memory_gib(share)
    return tuple(known.get(gpu) for gpu in share)


def why_skipped(scenario: Scenario, share: tuple[str, ...], memory: tuple) -> str | None:
    """Why this run cannot deploy the scenario's layout (too few GPUs, too little memory)."""
    placement = scenario.placement
    name = f"the {placement.name} layout of {scenario.topology.name}"
    if placement.gpus > len(share):
        return (
            f"{name} needs {placement.gpus} GPU(s); this run has {len(share)} "
            f"({','.join(share) or 'none'}; CUDA_VISIBLE_DEVICES and xdist workers share "
            "the visible GPUs)"
        )
    too_small = gpus.does_not_fit(placement, memory)
    return f"{name} does not fit: {too_small}" if too_small else None


class GpuSessionGuard:
    """Counts what ran; lists the layouts skipped here; fails a session where nothing ran."""

    def __init__(self) -> None:
        self.ran = 0
        self.skipped: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.failed and report.when == "setup"):
            self.ran += 1
        elif report.skipped and report.when == "setup":
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            self.skipped[str(reason).removeprefix("Skipped: ")] += 1

    def verdict(self) -> str | None:
        """The one message of a GPU-tier session in which nothing ran, else None."""
        if self.ran or not self.skipped:
            return None
        reasons = "; ".join(f"{reason} (x{n})" for reason, n in self.skipped.most_common(3))
        return (
            f"discovery harness: GPU tier: nothing ran ({sum(self.skipped.values())} "
            f"skipped): {reasons}"
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.verdict() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = NOTHING_RAN

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        layouts = {r: n for r, n in self.skipped.items() if " layout of " in r}
        if layouts:
            terminalreporter.section("GPU layouts not run here")
            for reason in sorted(layouts):
                terminalreporter.write_line(reason)
        message = self.verdict()
        if message:
            terminalreporter.write_line(message, red=True, bold=True)
