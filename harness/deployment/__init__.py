"""Deploying a topology: start its workers, wait on discovery events, send requests, disrupt
it (a worker lost, a frontend restarted, etcd paused, LoRAs loaded), and stop it. Judging
what it observed is discovery_harness.judge's.

`core.Deployment` is the deployment: its `plan` (every value, computed before anything
starts), its `processes` (launch, kill, restart, stop), what it observes and one verdict;
its parts read `view.DeploymentView` (its namespace in discovery), never the deployment;
`readiness` holds the waits (each takes values: an observer, a `roster`, a deadline);
`options`, `session` and `worker` the data it works on; `progress` (sampled by
`start_sample`), `listing`, `stops`, `frontend_log` and `timeline` (a worker's registration
marks, defined once) what it reports while it runs; `disruption`, `lora` and `fingerprint`
what tests do with one (they import `core`, never this package's `__init__`).
"""

from discovery_harness.deployment.core import Deployment
from discovery_harness.deployment.options import (
    ETCD,
    FILE,
    FRONTEND_MODES,
    LATE,
    NATS,
    OWN,
    SHARED,
    TCP,
    ZMQ,
    Planes,
    Settings,
)
from discovery_harness.deployment.session import Session
from discovery_harness.deployment.worker import Worker

__all__ = [
    "ETCD",
    "FILE",
    "FRONTEND_MODES",
    "LATE",
    "NATS",
    "OWN",
    "SHARED",
    "TCP",
    "ZMQ",
    "Deployment",
    "Planes",
    "Session",
    "Settings",
    "Worker",
]
