"""The one child runner: Ctrl-C reaches children run from worker threads too (`history -j N`
waits on them in a thread pool, where no KeyboardInterrupt ever arrives)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from discovery_harness.common import child
from discovery_harness.common.deadline import Deadline

pytestmark = pytest.mark.process

# A child that says when it is ready, then stops on SIGINT as pytest does (its teardown ran).
# It takes Ctrl-C itself, as pytest does: a run started in the background by a script (`&`)
# hands its children SIGINT ignored.
WAITS_FOR_CTRL_C = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
print("waiting", flush=True)
try:
    time.sleep(60)
except KeyboardInterrupt:
    print("stopped its processes", flush=True)
    sys.exit(130)
"""


def _until_waiting(log: Path) -> None:
    """Until the child said it waits (its log, written by the runner), within a deadline."""
    deadline = Deadline(60)
    while not (log.exists() and "waiting" in log.read_text()):
        assert not deadline.expired, f"the child never said it waits: {log}"
        threading.Event().wait(deadline.slice(0.05))


def test_interrupt_all_passes_ctrl_c_to_a_threads_child_and_refuses_new_ones(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(child, "_interrupted", threading.Event())  # this test's own
    log = tmp_path / "child.log"
    codes: list[int] = []
    with log.open("w") as sink:
        worker = threading.Thread(
            target=lambda: codes.append(child.run([sys.executable, "-c", WAITS_FOR_CTRL_C], sink))
        )
        worker.start()
        _until_waiting(log)
        child.interrupt_all()
        worker.join(timeout=30)
    assert not worker.is_alive() and codes == [130]
    assert "stopped its processes" in log.read_text()
    with pytest.raises(KeyboardInterrupt), log.open("a") as sink:
        child.run([sys.executable, "-c", "print('must not start')"], sink)
    assert "must not start" not in log.read_text()


# A command that runs one child the harness's way, taking SIGTERM as Ctrl-C.
RUNS_A_CHILD = """
import sys
from discovery_harness.common import child
from discovery_harness.common.deadline import Deadline
with open(sys.argv[1], "w") as sink, child.termination_as_ctrl_c():
    try:
        child.run([sys.executable, "-c", sys.argv[2]], sink)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
"""


def test_sigterm_to_a_command_stops_its_child_as_ctrl_c_would(tmp_path):
    """A cancelled CI job (SIGTERM) must not leave a history's or a bisect's child session
    running: the child gets SIGINT and its teardown runs."""
    log = tmp_path / "child.log"
    command = subprocess.Popen(
        [sys.executable, "-c", RUNS_A_CHILD, str(log), WAITS_FOR_CTRL_C],
        stdout=subprocess.PIPE,
        text=True,
    )
    _until_waiting(log)
    command.send_signal(signal.SIGTERM)
    out, _ = command.communicate(timeout=60)
    assert command.returncode == 130 and "interrupted" in out
    assert "stopped its processes" in log.read_text()
