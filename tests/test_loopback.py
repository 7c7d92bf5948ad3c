"""Every Dynamo process gets loopback hosts, its own ports, and none of the caller's scoping;
the Hugging Face environment is the tier's."""

from __future__ import annotations

from discovery_harness.processes.loopback import ProcessPorts, inherited_env, loopback_env
from discovery_harness.runtime.launch import hugging_face_env
from discovery_harness.runtime.tier import CPU, GPU


def test_loopback_env_pins_everything_to_loopback(tmp_path, monkeypatch):
    monkeypatch.setenv("DYN_NAMESPACE", "someone-elses")
    pp = ProcessPorts(21001, 21002, 21003, 21004)
    env = {
        **inherited_env(),
        **loopback_env("http://127.0.0.1:1", "nats://127.0.0.1:2", pp, tmp_path / "t"),
    }
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
    assert env["TMPDIR"] == str(tmp_path / "t") and (tmp_path / "t").is_dir()
    assert "DYN_NAMESPACE" not in env  # it would silently scope the frontend


def test_hugging_face_env_is_the_tiers(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", "/runner/hf")
    cpu = hugging_face_env(CPU, tmp_path)
    assert cpu["HF_HUB_OFFLINE"] == cpu["TRANSFORMERS_OFFLINE"] == "1"
    assert cpu["HF_HOME"] == str(tmp_path)  # private: nothing from the caller's cache
    gpu = hugging_face_env(GPU, tmp_path)
    assert "HF_HOME" not in gpu and gpu["HF_HUB_OFFLINE"] == "1"  # the runner's cache, offline
    assert hugging_face_env(GPU, tmp_path, offline=False) == {}
