"""Where the observer reads Dynamo's discovery keys: etcd, or the file store.

Each source gives a snapshot, a stream of changes after it, and a direct read; the observer
(discovery_harness.discovery.observer) holds the state, the events and the waits for both, so the
checks never
know which backend a deployment used.

- etcd: a range read at a revision, then a watch from the next revision.
- file (`DYN_DISCOVERY_BACKEND=file`, `DYN_FILE_KV=<dir>`): one file per key,
  `<dir>/<bucket>/<url-encoded rest of the key>` (measured on 1.6.1: `v1/instances/ns%2F
  backend%2Fgenerate%2F<id>`), watched with inotify (watchfiles) and re-read on each change.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, unquote, urlparse

import etcd3

PREFIX = "v1/"
Change = tuple[str, str, bytes | None]  # ("put" | "delete", key, value)


class DiscoverySource(Protocol):
    where: str  # for messages: the etcd URL or the directory

    def snapshot(self) -> tuple[dict[str, bytes], int | None]:
        """Every key now, and where a watch must resume to miss nothing after it."""

    def watch(
        self,
        after: int | None,
        on_changes: Callable[[list[Change]], None],
        on_error: Callable[[Exception], None],
    ) -> None: ...

    def read(self, prefixes: list[str]) -> dict[str, bytes]:
        """A direct read of the keys under `prefixes`, bypassing the watch."""

    def reopen(self) -> None:
        """After the watch broke: whatever a new snapshot and watch need."""

    def close(self) -> None: ...


# gRPC shares one connection per target among a process's channels: a client made right after
# etcd restarted would inherit another's reconnect backoff and fail its first call with that
# one's last error ("Connection refused"). Each client keeps its connection to itself.
_OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


def etcd_client(etcd_url: str) -> etcd3.Etcd3Client:
    parsed = urlparse(etcd_url if "://" in etcd_url else f"http://{etcd_url}")
    return etcd3.client(
        host=parsed.hostname or "127.0.0.1",
        port=parsed.port or 2379,
        grpc_options=_OWN_CONNECTION,
    )


class EtcdSource:
    def __init__(self, url: str) -> None:
        self.where = url
        self.client = etcd_client(url)
        self._watch_id: int | None = None

    def snapshot(self) -> tuple[dict[str, bytes], int | None]:
        response = self.client.get_prefix_response(PREFIX)
        return {kv.key.decode(): kv.value for kv in response.kvs}, response.header.revision

    def watch(
        self,
        after: int | None,
        on_changes: Callable[[list[Change]], None],
        on_error: Callable[[Exception], None],
    ) -> None:
        def delivered(response: object) -> None:
            if isinstance(response, Exception):
                on_error(response)
                return
            on_changes(
                [
                    (
                        "delete" if type(e).__name__ == "DeleteEvent" else "put",
                        e.key.decode(),
                        e.value,
                    )
                    for e in response.events  # type: ignore[attr-defined]
                ]
            )

        start = None if after is None else after + 1
        self._watch_id = self.client.add_watch_prefix_callback(
            PREFIX, delivered, start_revision=start
        )

    def read(self, prefixes: list[str]) -> dict[str, bytes]:
        return {
            meta.key.decode(): value
            for prefix in prefixes
            for value, meta in self.client.get_prefix(prefix)
        }

    def reopen(self) -> None:
        """A fresh client: etcd3 marks an endpoint that failed as unusable for good."""
        old, self.client = self.client, etcd_client(self.where)
        with contextlib.suppress(Exception):
            old.close()

    def close(self) -> None:
        if self._watch_id is not None:
            with contextlib.suppress(Exception):
                self.client.cancel_watch(self._watch_id)
            self._watch_id = None
        self.client.close()


class FileSource:
    def __init__(self, root: Path) -> None:
        self.where = str(root)
        self.root = root
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._snapshot: dict[str, bytes] = {}

    def key_of(self, path: Path) -> str | None:
        relative = path.relative_to(self.root)
        if len(relative.parts) < 2:
            return None
        return "/".join(relative.parts[:-1]) + "/" + unquote(relative.parts[-1])

    def path_of(self, key: str) -> Path:
        """Where a key lives (the self-tests write keys the way Dynamo does)."""
        bucket, rest = key.split("/", 2)[:2], key.split("/", 2)[2]
        return self.root.joinpath(*bucket, quote(rest, safe=""))

    def snapshot(self) -> tuple[dict[str, bytes], int | None]:
        self._snapshot = self.read([PREFIX])
        return dict(self._snapshot), None

    def watch(
        self,
        after: int | None,
        on_changes: Callable[[list[Change]], None],
        on_error: Callable[[Exception], None],
    ) -> None:
        import watchfiles

        self.root.mkdir(parents=True, exist_ok=True)

        def run() -> None:
            caught_up = False
            try:
                for batch in watchfiles.watch(
                    self.root,
                    stop_event=self._stop,
                    debounce=50,
                    yield_on_timeout=True,
                    rust_timeout=100,
                ):
                    if not caught_up:  # the watch is live now: what changed since the snapshot
                        caught_up = True
                        on_changes(self._since_snapshot())
                    changes: list[Change] = []
                    for _, name in sorted(batch, key=lambda change: change[1]):
                        key = self.key_of(Path(name))
                        if key is None or not key.startswith(PREFIX):
                            continue
                        try:
                            changes.append(("put", key, Path(name).read_bytes()))
                        except (FileNotFoundError, IsADirectoryError):
                            changes.append(("delete", key, None))
                    if changes:
                        on_changes(changes)
            except Exception as error:  # the watch itself failed
                on_error(error)

        self._thread = threading.Thread(target=run, name="file-discovery-watch", daemon=True)
        self._thread.start()

    def _since_snapshot(self) -> list[Change]:
        now = self.read([PREFIX])
        changes: list[Change] = [("delete", k, None) for k in self._snapshot if k not in now]
        changes += [("put", k, v) for k, v in now.items() if self._snapshot.get(k) != v]
        return changes

    def read(self, prefixes: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for path in self.root.rglob("*"):
            key = self.key_of(path) if path.is_file() else None
            if key is not None and any(key.startswith(p) for p in prefixes):
                with contextlib.suppress(FileNotFoundError):
                    found[key] = path.read_bytes()
        return found

    def reopen(self) -> None:
        """Nothing to reconnect: the directory is local."""

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
