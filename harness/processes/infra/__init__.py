"""etcd + NATS for a test session: external endpoints, containers, or local binaries."""

from discovery_harness.processes.infra.base import Endpoints, InfraUnavailable, Provider
from discovery_harness.processes.infra.select import PROVIDERS, select_provider

__all__ = ["PROVIDERS", "Endpoints", "InfraUnavailable", "Provider", "select_provider"]
