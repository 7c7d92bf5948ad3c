"""The GPU job's preflight: each check can fail, with a message naming what it found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from discovery_harness.common.locations import package_dir
from discovery_harness.processes.infra.local_process import LocalProcessProvider
from discovery_harness.runtime import preflight
from tests.inner_pytest import run_cli

ROOT = Path(__file__).resolve().parent.parent


def test_the_stack_must_be_a_release_with_contracts():
    proven = preflight.proven_releases()
    assert proven["1.6.1"] == "0.5.21" and "0.7.1" in proven
    assert preflight.check_versions("1.6.1", "0.5.21", proven).ok
    wrong = preflight.check_versions("1.6.1", "0.5.9", proven)
    assert not wrong.ok
    assert "ai-dynamo 1.6.1, sglang 0.5.9" in wrong.detail
    assert "ai-dynamo 1.6.1 with sglang 0.5.21" in wrong.detail
    assert not preflight.check_versions(None, None, proven).ok


def test_the_image_must_hold_the_release_its_tag_names():
    image = "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1"
    assert preflight.check_image(image, "1.6.1").ok
    other = preflight.check_image(image, "1.5.0")
    assert not other.ok and "ai-dynamo 1.5.0 installed" in other.detail
    assert preflight.check_image("localhost:5000/runtime", "1.6.1").ok  # no tag: not compared


def test_unwritable_places_are_named(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    check = preflight.check_writable({"reports": str(blocked / "reports"), "tmp": str(tmp_path)})
    assert not check.ok and check.detail.startswith(f"reports {blocked / 'reports'}")


@pytest.mark.process
def test_etcd_and_nats_must_answer(tmp_path, monkeypatch):
    provider = LocalProcessProvider()
    endpoints = provider.start(tmp_path / "infra")
    try:
        monkeypatch.setenv("ETCD_ENDPOINTS", endpoints.etcd)
        monkeypatch.setenv("NATS_SERVER", endpoints.nats)
        assert preflight.check_service("etcd", "ETCD_ENDPOINTS", preflight._etcd_answers).ok
        assert preflight.check_service("nats", "NATS_SERVER", preflight._nats_answers).ok
    finally:
        provider.stop()
    down = preflight.check_service("etcd", "ETCD_ENDPOINTS", preflight._etcd_answers)
    assert not down.ok and "does not answer" in down.detail
    assert not preflight.check_service("nats", "NATS_SERVER", preflight._nats_answers).ok


def _preflight(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "preflight",
        *args,
        timeout=60,
        whole_env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""},
    )


@pytest.mark.process
def test_no_gpu_fails_preflight_unless_a_rehearsal_allows_it():
    strict = _preflight()
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "preflight: [FAILED] gpus: none visible" in strict.stdout
    assert "preflight: FAILED: driver, gpus" in strict.stderr
    allowed = _preflight("--allow-no-gpu")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "preflight: [NO GPU (allowed)] gpus" in allowed.stdout
    assert "preflight: [ok] stack versions: ai-dynamo 1.6.1, sglang 0.5.21" in allowed.stdout


@pytest.mark.process
def test_preflight_runs_on_the_standard_library_alone(tmp_path):
    """It runs in the image's Python before the harness's libraries are installed (the
    harness's package alone on the path: no site-packages at all)."""
    (tmp_path / "discovery_harness").symlink_to(package_dir("discovery_harness"))
    code = (
        "import sys; import discovery_harness.runtime.preflight, "
        "discovery_harness.runtime.image_stack; "
        "print(sorted(m.split('.')[0] for m in sys.modules if m.split('.')[0] not in "
        "sys.stdlib_module_names and m.split('.')[0] != 'discovery_harness'))"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "['__main__']", result.stdout + result.stderr


def test_the_image_stack_is_the_dynamo_stack_and_a_venv_may_not_shadow_it(tmp_path, capsys):
    from discovery_harness.runtime import image_stack

    stack = image_stack.closure()
    assert {"ai-dynamo", "sglang", "torch", "filelock"} <= set(stack)
    assert not {"pytest-xdist", "cslab-etcd3", "nats-py", "testcontainers"} & set(stack)
    site = tmp_path / "site"
    (site / "filelock-0.0.1.dist-info").mkdir(parents=True)
    (site / "filelock-0.0.1.dist-info" / "METADATA").write_text("Name: filelock\nVersion: 0.0.1\n")
    assert image_stack.main(["touched", str(site)]) == 1
    assert f"filelock (the image has {stack['filelock']})" in capsys.readouterr().out
    (site / "filelock-0.0.1.dist-info" / "METADATA").write_text("Name: nats-py\nVersion: 2\n")
    assert image_stack.main(["touched", str(site)]) == 0


def test_the_harness_pins_yield_to_the_images_versions():
    """Dynamo's CUDA image holds httpx 0.29.0 and filelock 4.3.2 where the harness pins 0.28.1
    and 3.20.0: constrained to the image, those pins could never install; they yield."""
    from discovery_harness.runtime import image_stack

    lines = [
        "# comment",
        "httpx==0.28.1",
        "filelock==3.20.0  # a trailing comment",
        "nats-py==2.16.0",
        "",
        "protobuf>=5,<8",
    ]
    stack = {"httpx": "0.29.0", "filelock": "4.3.2", "protobuf": "6.33.6"}
    expected = ["httpx", "filelock", "nats-py==2.16.0", "protobuf"]
    assert image_stack.yielding(lines, stack) == expected
