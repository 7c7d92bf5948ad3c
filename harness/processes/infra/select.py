"""Choose an infra provider: external -> docker -> process, unless the user names one."""

from __future__ import annotations

from collections.abc import Callable

from discovery_harness.processes.infra.base import InfraUnavailable, Provider
from discovery_harness.processes.infra.docker import DockerProvider
from discovery_harness.processes.infra.external import ExternalProvider
from discovery_harness.processes.infra.local_process import LocalProcessProvider

PROVIDERS: dict[str, Callable[[], Provider]] = {
    "external": ExternalProvider,
    "docker": DockerProvider,
    "process": LocalProcessProvider,
}


def select_provider(choice: str = "auto") -> Provider:
    """The named provider, or the first one that can run here."""
    if choice != "auto":
        provider = PROVIDERS[choice]()
        reason = provider.unavailable_reason()
        if reason:
            raise InfraUnavailable(f"--infra={choice} is not possible here: {reason}")
        return provider
    reasons = []
    for name, make in PROVIDERS.items():
        provider = make()
        reason = provider.unavailable_reason()
        if reason is None:
            return provider
        reasons.append(f"  {name}: {reason}")
    raise InfraUnavailable(
        "no way to run etcd and NATS here:\n"
        + "\n".join(reasons)
        + "\nInstall etcd-server and nats-server (ci/setup.sh does), start a Docker engine, "
        "or set ETCD_ENDPOINTS and NATS_SERVER."
    )
