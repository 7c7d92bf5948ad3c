"""Two history runs compared cell by cell: a flipped verdict is named, a window is a rate."""

from __future__ import annotations

from discovery_harness.history import compare
from discovery_harness.history.record import ItemFindings
from discovery_harness.history.run import ReleaseRun
from discovery_harness.history.stability import Stable

LISTED_EARLY = {"kind": "listed-before-topology-complete", "role": "-", "message": "m"}
NEVER = {"kind": "never-registered", "role": "mm-worker", "message": "m"}


def _run(release: str, **cells: ItemFindings) -> ReleaseRun:
    return ReleaseRun(
        release, "python", findings={k.replace("_", "-"): v for k, v in cells.items()}
    )


def _failed(*violations: dict, stability: str = "") -> ItemFindings:
    """A failed cell whose reruns `stability` names ("intermittent 1/3": 1 of 3 runs failed)."""
    stable = {}
    if stability:
        failed, runs = (int(n) for n in stability.split()[-1].split("/"))
        stable = Stable(runs, {"seen": failed}, failed).record()
    return ItemFindings("failed", violations=list(violations), stability=stability, stable=stable)


PASSED = ItemFindings("passed")


def test_the_same_table_agrees_everywhere():
    runs = [_run("0.7.1", aggregated=PASSED, mm_encode_pd=_failed(NEVER))]
    compared, found = compare.differences(runs, runs, ["aggregated", "mm-encode-pd"])
    assert (compared, found) == (2, [])


def test_a_deterministic_failure_against_a_pass_is_a_flip_and_named():
    now = [_run("0.8.1", mm_encode_pd=_failed(NEVER, stability="deterministic 2/2"))]
    before = [_run("0.8.1", mm_encode_pd=PASSED)]
    compared, found = compare.differences(now, before, ["mm-encode-pd"])
    assert compared == 1
    assert found == [compare.Disagreement("0.8.1", "mm-encode-pd", "FAIL: never-registered", "ok")]
    text = compare.report(compared, found, "a/history.json")
    assert "0 of 1 cells agree" in text and "| 0.8.1 | mm-encode-pd |" in text


def test_the_race_kinds_are_windows_even_when_every_run_saw_them():
    """Listed early on both tries of a cell in one run, not at all in the next: a window (what
    the kind observes is a time between listing and completion), not a flip; the kinds beside
    it still must match."""
    listed = _failed(LISTED_EARLY, stability="deterministic 2/2")
    _, found = compare.differences(
        [_run("0.9.1", disaggregated=listed)],
        [_run("0.9.1", disaggregated=PASSED)],
        ["disaggregated"],
    )
    assert found == []
    assert compare.CellClass.of(listed).describe() == "window: listed-before-topology-complete"
    both = _failed(NEVER, LISTED_EARLY, stability="deterministic 2/2")
    _, found = compare.differences(
        [_run("0.7.1", mm_encode_pd=both)],
        [_run("0.7.1", mm_encode_pd=_failed(NEVER))],
        ["mm-encode-pd"],
    )
    assert found == []
    _, found = compare.differences(
        [_run("0.7.1", mm_encode_pd=both)],
        [_run("0.7.1", mm_encode_pd=PASSED)],
        ["mm-encode-pd"],
    )
    assert [(d.now, d.before) for d in found] == [
        ("FAIL: never-registered; window: listed-before-topology-complete", "ok")
    ]


def test_a_window_agrees_with_a_pass_and_with_the_same_kinds_every_time():
    window = _failed(LISTED_EARLY, stability="intermittent 1/3")
    for other in (PASSED, _failed(LISTED_EARLY, stability="deterministic 2/2"), window):
        _, found = compare.differences(
            [_run("1.0.2", disaggregated=window)],
            [_run("1.0.2", disaggregated=other)],
            ["disaggregated"],
        )
        assert found == [], other


def test_a_window_does_not_excuse_a_different_deterministic_violation():
    window = _failed(LISTED_EARLY, stability="intermittent 1/3")
    _, found = compare.differences(
        [_run("0.9.1", mm_encode_pd=window)],
        [_run("0.9.1", mm_encode_pd=_failed(NEVER))],
        ["mm-encode-pd"],
    )
    assert [(d.now, d.before) for d in found] == [
        ("window: listed-before-topology-complete", "FAIL: never-registered")
    ]


def test_a_known_violation_is_not_a_flip_and_only_common_releases_count():
    known = ItemFindings("passed", known=["[bad-response-content] listing"])
    compared, found = compare.differences(
        [_run("1.6.1", mm_encode_p_d=known), _run("0.7.1", aggregated=PASSED)],
        [_run("1.6.1", mm_encode_p_d=PASSED)],
        ["mm-encode-p-d", "aggregated"],
    )
    assert (compared, found) == (1, [])


def test_history_against_another_run_writes_what_differs(tmp_path, capsys):
    from discovery_harness.cli.app import main as harness_main
    from discovery_harness.history import table

    kept = [_run("0.7.1", aggregated=PASSED)]
    (tmp_path / "history.json").write_text(table.as_json(kept))
    other = tmp_path / "other.json"
    other.write_text(table.as_json([_run("0.7.1", aggregated=_failed(NEVER))]))
    argv = ["history", "--releases", "0.7.1", "--topology", "aggregated", "--no-build"]
    argv += ["--envs-dir", str(tmp_path / "no-envs"), "--out", str(tmp_path)]
    assert harness_main([*argv, "--against", str(other)]) == 0  # the table kept, compared
    written = (tmp_path / "compare.md").read_text()
    assert "0 of 1 cells agree" in written and "| 0.7.1 | aggregated | ok | FAIL: never" in written
    assert harness_main([*argv, "--against", str(tmp_path / "none.json")]) == 4
    assert "--against" in capsys.readouterr().err


def test_two_runs_read_together_show_steady_failures_and_windows_with_their_rate():
    listed = _failed(LISTED_EARLY, stability="deterministic 2/2")
    both = _failed(NEVER, LISTED_EARLY, stability="deterministic 2/2")
    assert compare.merged_cell(PASSED, PASSED) == "ok"
    assert compare.merged_cell(None, None) == "-"
    assert (
        compare.merged_cell(listed, PASSED) == "window (1/2 runs): listed-before-topology-complete"
    )
    assert compare.merged_cell(both, _failed(NEVER)) == (
        "FAIL: never-registered; window (1/2 runs): listed-before-topology-complete"
    )
    assert compare.merged_cell(_failed(NEVER), PASSED) == "FLIPS: FAIL: never-registered / ok"
    matrix = compare.merged_matrix(
        [_run("0.9.1", disaggregated=listed)],
        [_run("0.9.1", disaggregated=listed)],
        ["disaggregated", "rerank"],
    )
    assert matrix.splitlines()[2] == (
        "| disaggregated | window (2/2 runs): listed-before-topology-complete |"
    )
    assert "rerank" not in matrix


def test_windows_of_either_race_kind_agree_and_a_failure_in_every_run_stays_steady():
    listed = _failed(LISTED_EARLY, stability="intermittent 2/3")
    errored = _failed(
        {**LISTED_EARLY, "kind": "error-for-listed-model"}, stability="intermittent 1/3"
    )
    _, found = compare.differences(
        [_run("1.2.1", disaggregated=listed)],
        [_run("1.2.1", disaggregated=errored)],
        ["disaggregated"],
    )
    assert found == []
    # Every run failed, the sets differed (a race beside #4486): never-registered is steady.
    varied = _failed(NEVER, LISTED_EARLY, stability="intermittent 3/3")
    assert compare.merged_cell(varied, _failed(NEVER)) == (
        "FAIL: never-registered; window (1/2 runs): listed-before-topology-complete"
    )
