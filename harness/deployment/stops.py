"""Deployments stop in the background, so the next test starts while the last one's workers
finish Dynamo's graceful shutdown (~7 s each, mostly its grace period). Deployments share
nothing that a stop touches: each has its own namespace, model name, ports and processes.
The session waits for every stop before it ends; the process table's cleanup handlers still
cover Ctrl-C and interpreter exit."""

from __future__ import annotations

import threading
from collections.abc import Callable


class BackgroundStops:
    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()

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

    def drain(self) -> None:
        """Wait for every stop; re-raise the first that failed."""
        with self._lock:
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0]
