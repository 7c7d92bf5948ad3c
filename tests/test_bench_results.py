"""The benchmark's figures are written by the benchmark: dated, with machine and command."""

from __future__ import annotations

import re

import pytest

from bench.phases import Phases, median, write_table
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


def test_a_section_is_replaced_alone_and_kept_when_the_main_part_is_rewritten(tmp_path):
    path = tmp_path / "RESULTS.md"
    main = Results("Benchmark")
    main.say("main figures 1")
    main.write(path)
    flakes = Results("Flake budget")
    flakes.say("20 runs, 0 failed")
    flakes.write(path, section="flakes")
    again = Results("Benchmark")
    again.say("main figures 2")
    again.write(path)
    text = path.read_text()
    assert text.startswith("# Benchmark\n") and "main figures 2" in text
    assert "main figures 1" not in text
    assert "## Flake budget" in text and text.count("20 runs, 0 failed") == 1
    flakes.lines = ["10 runs, 1 failed"]
    flakes.write(path, section="flakes")
    text = path.read_text()
    assert "20 runs" not in text and "10 runs, 1 failed" in text and "main figures 2" in text


def test_the_phase_table_takes_each_phases_median_and_shows_a_missing_one_as_a_dash():
    runs = [
        Phases(forked=0.02, card=0.2, ready=0.25, listed=0.3, stop=5.4),
        Phases(forked=0.04, card=0.4, ready=0.45, listed=0.3, stop=5.5),
        Phases(forked=0.03, card=0.3, ready=None, listed=None, stop=5.3),
    ]
    middle = median(runs)
    assert (middle.forked, middle.card, middle.listed, middle.stop) == (0.03, 0.3, 0.3, 5.4)
    assert middle.ready == 0.35  # the median of the runs that have it
    assert middle.lora_load is None  # no run had one
    results = Results("Benchmark")
    write_table(results, [("lora-p-d", middle)])
    assert results.lines[0].startswith("| topology | forked | instance | card | ready | listed |")
    row = "| lora-p-d | 0.03 s | - | 0.30 s | 0.35 s | 0.30 s | - | - | - | 5.40 s |"
    assert results.lines[-1] == row


def test_the_flake_budgets_suites_are_parsed_and_a_bad_one_is_a_usage_error():
    import argparse

    from bench.flakes import _parse_suites

    parser = argparse.ArgumentParser()
    parsed = _parse_suites("canary-matrix:20,readme", parser)
    assert parsed == [("canary-matrix", 20), ("readme", 10)]
    for bad in ("nosuch:3", "readme:x", "readme:0"):
        with pytest.raises(SystemExit) as usage:
            _parse_suites(bad, parser)
        assert usage.value.code == 2
