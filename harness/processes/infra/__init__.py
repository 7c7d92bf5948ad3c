"""etcd + NATS for a test session: external endpoints, containers, or local binaries."""

from harness.processes.infra.base import Endpoints, InfraUnavailable, Provider
from harness.processes.infra.select import PROVIDERS, select_provider

__all__ = ["PROVIDERS", "Endpoints", "InfraUnavailable", "Provider", "select_provider"]
