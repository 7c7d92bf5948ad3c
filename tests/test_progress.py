"""Live start-up progress: the lines a long start prints, and that they reach the terminal."""

from __future__ import annotations

import pytest

from discovery_harness.deployment.progress import LogMilestones, Sample, StartProgress, WorkerSample
from tests.inner_pytest import run_pytest


def _worker(**changes: object) -> WorkerSample:
    fields: dict[str, object] = dict(
        role="prefill",
        pid=101,
        started=0.0,
        alive=True,
        serving=False,
        registered=False,
        milestone=None,
    )
    fields.update(changes)
    return WorkerSample(**fields)  # type: ignore[arg-type]


def test_each_step_is_one_line_in_order():
    lines: list[str] = []
    progress = StartProgress("disaggregated-1gpu h-x", lines.append, heartbeat_s=1000, began=0.0)
    decode_waiting = WorkerSample("decode", None, None, False, False, False, None, ("prefill",))
    steps = [
        Sample((_worker(), decode_waiting)),
        Sample((_worker(milestone="loading weights"), decode_waiting)),
        Sample((_worker(milestone="loading weights"), decode_waiting)),  # nothing new
        Sample((_worker(serving=True), decode_waiting)),
        Sample((_worker(serving=True, registered=True), decode_waiting)),
        Sample((_worker(serving=True, registered=True),), listed=True),
        Sample((_worker(serving=True, registered=True),), listed=True, answered=True),
    ]
    for second, sample in enumerate(steps):
        progress.update(sample, now=float(second * 10))
    progress.finish("ready", now=70.0)
    assert lines == [
        "[harness disaggregated-1gpu h-x +   0.0s] prefill (pid 101): process started",
        "[harness disaggregated-1gpu h-x +   0.0s] decode: waiting to start after prefill serve",
        "[harness disaggregated-1gpu h-x +  10.0s] prefill (pid 101): process started, "
        "loading weights (10 s in this step)",
        "[harness disaggregated-1gpu h-x +  30.0s] prefill (pid 101): serving (instance in etcd)",
        "[harness disaggregated-1gpu h-x +  40.0s] prefill (pid 101): registered (model card in "
        "etcd)",
        "[harness disaggregated-1gpu h-x +  50.0s] prefill (pid 101): listed in /v1/models",
        "[harness disaggregated-1gpu h-x +  60.0s] prefill (pid 101): first request answered",
        "[harness disaggregated-1gpu h-x +  70.0s] ready",
    ]


def test_a_long_wait_repeats_what_each_worker_is_at():
    lines: list[str] = []
    progress = StartProgress("aggregated-1gpu h-y", lines.append, heartbeat_s=30, began=0.0)
    loading = Sample((_worker(role="worker", milestone="capturing CUDA graphs"),))
    for second in (0.0, 10.0, 29.0, 31.0, 45.0):
        progress.update(loading, now=second)
    assert len(lines) == 2
    assert lines[1] == (
        "[harness aggregated-1gpu h-y +  31.0s] still starting: worker (pid 101): process "
        "started, capturing CUDA graphs (31 s in this step)"
    )
    progress.update(Sample((_worker(role="worker", alive=False),)), now=50.0)
    assert lines[-1] == "[harness aggregated-1gpu h-y +  50.0s] worker (pid 101): exited"


def test_log_milestones_are_read_incrementally(tmp_path):
    log = tmp_path / "w.log"
    milestones = LogMilestones(log)
    assert milestones.poll() is None  # no log yet
    log.write_text("[2026] INFO model_runner: Load weight begin. avail mem=70.1 GB\n[2026] Capt")
    assert milestones.poll() == "loading weights"
    with log.open("a") as handle:
        handle.write("ure decode CUDA graph begin. This can take up to several minutes.\n")
    assert milestones.poll() == "capturing CUDA graphs"
    assert milestones.poll() == "capturing CUDA graphs"


@pytest.mark.e2e
@pytest.mark.nightly  # a whole inner session under xdist with a fresh worker: ~30 s
@pytest.mark.long  # the progress lines themselves: the unit tests above
@pytest.mark.timeout(240)
def test_progress_reaches_the_terminal_from_an_xdist_worker_under_q():
    """A real start, run as a user would: -q, one xdist worker, progress switched on."""
    result = run_pytest(
        "-q",
        "-n",
        "1",
        "--tier",
        "cpu",
        "--spawn",
        "fresh",  # a start of seconds, as the GPU tier's take minutes
        "--progress",
        "on",
        "--progress-heartbeat",
        "3",
        "scenarios/test_topologies.py::test_registers_and_serves[aggregated]",
        timeout=220,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    lines = [line for line in out.splitlines() if line.startswith("[harness aggregated-1gpu")]
    order = [
        "process started",
        "serving (instance in etcd)",
        "registered (model card in etcd)",
        "listed in /v1/models",
        "first request answered",
    ]
    for step in order:
        assert any(step in line for line in lines), (step, lines)
    assert any("still starting: worker (pid" in line for line in lines), lines
    assert lines[-1].endswith("] ready"), lines
