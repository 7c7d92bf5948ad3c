"""The one child runner: Ctrl-C reaches children run from worker threads too (`history -j N`
waits on them in a thread pool, where no KeyboardInterrupt ever arrives)."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from discovery_harness.common import child

pytestmark = pytest.mark.process

# A child that says when it is ready, then stops on SIGINT as pytest does (its teardown ran).
WAITS_FOR_CTRL_C = """
import sys, time
print("waiting", flush=True)
try:
    time.sleep(60)
except KeyboardInterrupt:
    print("stopped its processes", flush=True)
    sys.exit(130)
"""


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
        deadline = time.monotonic() + 30
        while "waiting" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        child.interrupt_all()
        worker.join(timeout=30)
    assert not worker.is_alive() and codes == [130]
    assert "stopped its processes" in log.read_text()
    with pytest.raises(KeyboardInterrupt), log.open("a") as sink:
        child.run([sys.executable, "-c", "print('must not start')"], sink)
    assert "must not start" not in log.read_text()
