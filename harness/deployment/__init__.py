"""Deploying a topology and judging it: start its workers, wait on discovery events, check
the contract, send requests, disrupt it (a worker lost, a frontend restarted, etcd paused,
LoRAs loaded), and stop it.

`core.Deployment` is the deployment; `options`, `session` and `worker` the data it works on;
`progress`, `listing`, `stops` and `timeline` what it reports while it runs; `disruption`,
`lora` and `fingerprint` what tests do with one.
"""

from harness.deployment.core import Deployment, dynamo_version
from harness.deployment.options import (
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
from harness.deployment.session import Session
from harness.deployment.worker import Worker

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
    "dynamo_version",
]
