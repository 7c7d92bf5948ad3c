"""The first screen: a known violation's line cut to a readable length with its size (whole in
the JUnit report), the timeline's rows named by topology (never a path cut from the left), and
the JUnit file announced under the name it keeps."""

from __future__ import annotations

import base64
from pathlib import Path

from discovery_harness.report.terminal import (
    LABEL_CHARS,
    OBSERVED,
    cut,
    known_violation,
    timeline_label,
)
from tests.inner_pytest import cli_in_process

PNG = base64.b64encode(bytes(range(256)) * 3).decode()  # ~1,000 characters, as an image's
DIFFUSION_KNOWN = (
    "[bad-content] Dynamo 1.6.1's image diffusion handler never reads `n`: it only logs whether "
    "the request has one, asks DiffGenerator.generate for no output count and keeps the first "
    f"result of a list, so n=2 is answered with one image on any engine{OBSERVED}worker "
    "'image-diffusion': image[n-2]: POST /v1/images/generations -> 200 (BAD: 1 image, asked "
    f'for 2); body: {{"created": 1, "data": [{{"b64_json": "{PNG}"}}]}}'
)


def test_a_known_violations_line_shows_the_bodys_start_and_its_size():
    line = known_violation(DIFFUSION_KNOWN)
    assert len(line) <= 400, len(line)
    assert PNG not in line
    assert "never reads `n`" in line and "-> 200 (BAD: 1 image" in line
    observed = DIFFUSION_KNOWN.partition(OBSERVED)[2]
    assert f"… ({len(observed):,} chars)" in line


def test_a_short_text_is_shown_whole():
    assert cut("status 503", 20) == "status 503"
    assert known_violation("[listed-early] listed; observed: 404") == (
        "[listed-early] listed; observed: 404"
    )


def test_the_timeline_names_a_row_by_topology_or_the_tests_parameter_never_a_cut_path():
    long_path = "scenarios/test_topologies.py::test_registers_and_serves[mm-encode-pd]"
    assert timeline_label(long_path, "mm-encode-pd") == "mm-encode-pd"
    order = (
        "scenarios/test_start_order.py::test_every_start_order[mm-encode-pd:mm-worker>mm-encoder]"
    )
    assert timeline_label(order, "mm-encode-pd") == "mm-encode-pd:mm-worker>mm-encoder"
    plain = "scenarios/test_audit.py::test_audit_names_the_mm_worker_that_never_registered"
    assert timeline_label(plain, "mm-encode-pd") == "mm-encode-pd"
    other = "scenarios/test_transport_matrix.py::test_x[file-discovery]"
    assert timeline_label(other, "aggregated") == "aggregated"
    label = timeline_label(
        "t.py::test[mm-encode-p-d:" + ">".join(["mm-encoder"] * 6) + "]", "mm-encode-p-d"
    )
    assert len(label) == LABEL_CHARS and label.startswith("mm-encode-p-d:")


def test_conformance_announces_the_junit_file_it_keeps(capsys, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HARNESS_REPORT_DIR", str(tmp_path))
    result = cli_in_process(capsys, "conformance", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout + result.stderr
    kept = tmp_path / "conformance.xml"
    assert f"generated xml file: {kept}" in result.stdout, result.stdout
    assert ".conformance-" not in result.stdout
    assert kept.exists() and [p.name for p in tmp_path.iterdir()] == ["conformance.xml"]
