"""A worker site for command-builder unit tests: fixed ports, nothing allocated or started."""

from __future__ import annotations

from pathlib import Path

from discovery_harness.processes.loopback import ProcessPorts
from discovery_harness.runtime.launch import WorkerSite


def worker_site(tmp_path: Path, **fields: object) -> WorkerSite:
    """A site under `tmp_path`; `fields` replace any of WorkerSite's (model_name, ...)."""
    defaults: dict[str, object] = {
        "namespace": "h-ns",
        "model_name": "m",
        "ports": ProcessPorts(20001, 20002, 20003, 20004),
        "etcd": "http://127.0.0.1:1",
        "nats": "nats://127.0.0.1:2",
        "tmpdir": tmp_path / "tmp",
        "media_dir": tmp_path / "media",
        "hf_home": tmp_path / "hf",
    }
    return WorkerSite(**{**defaults, **fields})  # type: ignore[arg-type]
