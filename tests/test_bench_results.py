"""The benchmark's figures are written by the benchmark: dated, with machine and command."""

from __future__ import annotations

import re

import pytest

from bench.results import Results

pytestmark = pytest.mark.unit


def test_results_are_written_with_when_where_and_what_ran(tmp_path):
    results = Results("Benchmark")
    results.table(("topology", "card"))
    results.row("aggregated", "0.22 s")
    written = results.write(tmp_path / "RESULTS.md", release="1.6.1")
    text = written.read_text()
    assert text.startswith("# Benchmark\n")
    assert re.search(r"on \d{4}-\d\d-\d\d \d\d:\d\d UTC; machine: \d+ cores, \d+ GiB", text)
    assert "ai-dynamo 1.6.1" in text and "Written by `python -m " in text
    assert text.rstrip().endswith("| aggregated | 0.22 s |")
