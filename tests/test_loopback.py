"""Every Dynamo process gets loopback hosts, its own ports, and none of the caller's scoping."""

from __future__ import annotations

from harness.loopback import ProcessPorts, dynamo_env


def test_dynamo_env_pins_everything_to_loopback(tmp_path, monkeypatch):
    monkeypatch.setenv("DYN_NAMESPACE", "someone-elses")
    pp = ProcessPorts(21001, 21002, 21003, 21004)
    env = dynamo_env(
        etcd_endpoint="http://127.0.0.1:1",
        nats_url="nats://127.0.0.1:2",
        process_ports=pp,
        tmpdir=tmp_path / "t",
    )
    for var in (
        "DYN_TCP_RPC_HOST",
        "DYN_TCP_RESPONSE_STREAM_HOST",
        "DYN_SYSTEM_HOST",
        "DYN_EVENT_PLANE_HOST",
        "SGLANG_HOST_IP",
    ):
        assert env[var] == "127.0.0.1"
    assert env["DYN_EVENT_PLANE"] == "nats"
    assert (env["DYN_TCP_RPC_PORT"], env["DYN_SYSTEM_PORT"]) == ("21001", "21003")
    assert env["HF_HUB_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"
    assert env["TMPDIR"] == str(tmp_path / "t") and (tmp_path / "t").is_dir()
    assert "DYN_NAMESPACE" not in env  # it would silently scope the frontend
