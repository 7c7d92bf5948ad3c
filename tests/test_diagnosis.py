"""A failure's evidence: the worker's log lines that matter, its last lines, the log's path;
and the worker named with its start path."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from discovery_harness.deployment import diagnosis

pytestmark = pytest.mark.unit


def _worker(log_path):
    return SimpleNamespace(
        role="mm-worker",
        pid=42,
        start_paths=("init_multimodal_worker",),
        proc=SimpleNamespace(log_path=log_path),
    )


def test_the_evidence_keeps_what_matters_and_the_last_lines(tmp_path):
    log = tmp_path / "mm-worker.log"
    noise = [f"INFO loading shard {i}" for i in range(40)]
    log.write_text(
        "\n".join(
            [
                "HARNESS-FAULT skip-registration: installed",
                *noise[:20],
                "INFO register: Successfully registered LLM with runtime config",
                "\x1b[31mERROR\x1b[0m handler: boom",
                *noise[20:],
            ]
        )
    )
    evidence = diagnosis.log_evidence(_worker(log))
    shown = [line.removeprefix("    | ") for line in evidence.splitlines()[1:]]
    assert (
        shown
        == [
            "HARNESS-FAULT skip-registration: installed",
            "INFO register: Successfully registered LLM with runtime config",
            "ERROR handler: boom",  # colours stripped
            *noise[-diagnosis.LAST_LINES :],
        ]
    )
    assert f"log: {log} (43 lines;" in evidence.splitlines()[0]


def test_a_missing_log_is_said(tmp_path):
    assert "no log at" in diagnosis.log_evidence(_worker(tmp_path / "absent.log"))


def test_a_worker_is_named_with_its_start_path(tmp_path):
    named = diagnosis.who(_worker(tmp_path / "x.log"))
    assert named == "worker 'mm-worker' (pid 42, start path init_multimodal_worker)"
