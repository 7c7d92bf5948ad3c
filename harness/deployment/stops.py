"""Deployments' processes stop in the background (Deployment.stop_in_background), so the
next test starts while the last one's workers finish Dynamo's graceful shutdown (~5.4 s each,
mostly its 5 s grace period). Deployments share nothing that a stop touches: each has its own
namespace, model name, ports and processes. The session waits for every stop before it ends,
and hurries them first: a stop still waiting then SIGKILLs its process group a short wait
after its SIGTERM (discovery_harness.processes.managed.HURRIED_GRACE_S), since what is left is
Dynamo's grace (or a multinode follower that never exits on SIGTERM) and the infra goes next.
The process table's cleanup handlers still cover Ctrl-C and interpreter exit."""

from __future__ import annotations

import threading
from collections.abc import Callable


class BackgroundStops:
    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()
        self.ending = threading.Event()  # set by drain(): stops hand it to ManagedProcess.stop

    def submit(self, name: str, stop: Callable[[], None]) -> None:
        def run() -> None:
            try:
                stop()
            except BaseException as error:  # surfaced by drain()
                with self._lock:
                    self._errors.append(error)

        thread = threading.Thread(target=run, name=f"stop-{name}", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def drain(self, hurry: bool = True) -> None:
        """Wait for every stop (hurried, unless `hurry` is False: a benchmark timing whole
        graceful stops); re-raise the first that failed."""
        if hurry:
            self.ending.set()
        with self._lock:
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0]
