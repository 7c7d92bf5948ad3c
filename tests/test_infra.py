"""Infra selection and providers: a clear error when nothing can run, real services otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from discovery_harness.processes.infra import InfraUnavailable, select_provider
from discovery_harness.processes.infra.base import etcd_healthy, nats_connects
from discovery_harness.processes.infra.local_process import LocalProcessProvider


def test_no_provider_possible_says_what_to_install(monkeypatch):
    monkeypatch.delenv("ETCD_ENDPOINTS", raising=False)
    monkeypatch.delenv("NATS_SERVER", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(InfraUnavailable) as failure:
        select_provider("auto")
    message = str(failure.value)
    assert "apt-get install etcd-server nats-server" in message
    assert "ETCD_ENDPOINTS and NATS_SERVER" in message
    assert "no Docker-API engine reachable" in message


def test_a_named_provider_that_cannot_run_is_refused(monkeypatch):
    monkeypatch.delenv("ETCD_ENDPOINTS", raising=False)
    with pytest.raises(InfraUnavailable, match="--infra=external"):
        select_provider("external")


def test_external_is_preferred_when_both_variables_are_set(monkeypatch):
    monkeypatch.setenv("ETCD_ENDPOINTS", "http://127.0.0.1:1")
    monkeypatch.setenv("NATS_SERVER", "nats://127.0.0.1:2")
    assert select_provider("auto").name == "external"


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("etcd") is None, reason="needs the etcd binary")
def test_process_provider_runs_private_loopback_services(tmp_path):
    provider = LocalProcessProvider()
    endpoints = provider.start(tmp_path)
    try:
        assert endpoints.etcd.startswith("http://127.0.0.1:")
        assert endpoints.nats.startswith("nats://127.0.0.1:")
        assert etcd_healthy(endpoints.etcd) and nats_connects(endpoints.nats)
    finally:
        provider.stop()
    assert not etcd_healthy(endpoints.etcd)


@pytest.mark.e2e
def test_external_provider_uses_the_given_endpoints(infra_endpoints, monkeypatch):
    monkeypatch.setenv("ETCD_ENDPOINTS", infra_endpoints.etcd)
    monkeypatch.setenv("NATS_SERVER", infra_endpoints.nats)
    endpoints = select_provider("external").start(Path("unused"))
    assert (endpoints.etcd, endpoints.nats) == (infra_endpoints.etcd, infra_endpoints.nats)
