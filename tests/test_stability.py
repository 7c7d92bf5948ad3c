"""A verdict says whether it is deterministic: a failed judgement is run again until two runs
agree (at most N), in the bisect's oracle and in the history's cells."""

from __future__ import annotations

from pathlib import Path

from discovery_harness.history import compare, table
from discovery_harness.history import run as history_run
from discovery_harness.history.record import ItemFindings
from discovery_harness.history.run import ReleaseRun
from discovery_harness.history.stability import (
    CONFORMANT,
    DETERMINISTIC,
    INTERMITTENT,
    Stable,
    judge_stably,
)


def test_a_verdict_is_rerun_until_two_runs_agree():
    def scripted(*runs: set[str]):
        queue = [frozenset(r) for r in runs]
        return lambda: queue.pop(0)

    assert judge_stably(scripted(set())).outcome == CONFORMANT  # conformant: one run
    steady = judge_stably(scripted({"a: never-registered w"}, {"a: never-registered w"}))
    assert (steady.outcome, steady.runs) == (DETERMINISTIC, 2)
    assert "(deterministic, 2/2)" in steady.describe()
    flaky = judge_stably(scripted({"a: 503-after-ready"}, set(), {"a: 503-after-ready"}))
    assert (flaky.outcome, flaky.runs) == (INTERMITTENT, 3)
    assert "a: 503-after-ready (intermittent 2/3)" in flaky.describe()



def test_the_same_runs_get_the_same_label_in_bisect_history_and_compare(monkeypatch, tmp_path):
    """{a}, {a, b}, {a}: a violation every run saw beside one seen once is deterministic in
    the bisect's oracle, in the history's cell and in compare; a window (some run saw
    nothing) is intermittent in all three."""
    a, b = "aggregated: never-registered worker", "aggregated: listed-before-topology-complete"
    for runs, label, window in (
        ([{a}, {a, b}, {a}], "deterministic 3/3", False),
        ([{a}, set(), {a}], "intermittent 2/3", True),
    ):
        bisected = judge_stably(_scripted(*runs))
        assert bisected.label == label
        cell = _history_cell(monkeypatch, tmp_path / label.replace(" ", "-"), runs)
        assert cell.stability == label
        assert compare.CellClass.of(cell).window is window
        assert Stable.from_record(cell.stable) == bisected


def _scripted(*runs: set[str]):
    queue = [frozenset(r) for r in runs]
    return lambda: queue.pop(0)


def _history_cell(monkeypatch, out: Path, runs: list[set[str]]) -> ItemFindings:
    """The aggregated cell of a history whose runs of it saw `runs` (key: 'topology: kind role')."""

    def item(keys: set[str]) -> ItemFindings:
        violations = [
            {"kind": k.split()[1], "role": " ".join(k.split()[2:]), "message": "m"} for k in keys
        ]
        return ItemFindings("failed" if keys else "passed", "x", violations=violations)

    later = iter(runs[1:])
    monkeypatch.setattr(
        history_run,
        "run_release",
        lambda release, topologies, *_: ReleaseRun(
            release, "env", findings={t: item(next(later)) for t in topologies}
        ),
    )
    first = ReleaseRun("1.6.1", "env", findings={"aggregated": item(runs[0])})
    out.mkdir(parents=True)
    return history_run.rerun_failed(first, Path("envs"), out, [], most=3).findings["aggregated"]


def _never(role: str) -> ItemFindings:
    return ItemFindings(
        "failed", "x", violations=[{"kind": "never-registered", "role": role, "message": "m"}]
    )


def test_history_cells_rerun_failed_topologies_and_show_windows_as_rates(monkeypatch, tmp_path):
    """mm-encode-pd fails the same way twice (deterministic, two runs); disaggregated fails
    once in three (intermittent 1/3); aggregated passed and is not run again."""
    reruns: list[list[str]] = []
    scripted = {
        2: {"mm-encode-pd": _never("mm-worker"), "disaggregated": ItemFindings("passed")},
        3: {"disaggregated": ItemFindings("passed")},
    }

    def fake_release(release, topologies, envs_dir, out_dir, extra):
        reruns.append(list(topologies))
        attempt = int(out_dir.name.rsplit("run", 1)[1])
        found = {t: scripted[attempt][t] for t in topologies}
        return ReleaseRun(release, "env", findings=found)

    monkeypatch.setattr(history_run, "run_release", fake_release)
    first = ReleaseRun(
        "1.6.1",
        "env",
        findings={
            "aggregated": ItemFindings("passed"),
            "mm-encode-pd": _never("mm-worker"),
            "disaggregated": _never("prefill"),
        },
    )
    run = history_run.rerun_failed(first, Path("envs"), tmp_path, [], most=3)
    assert reruns == [["mm-encode-pd", "disaggregated"], ["disaggregated"]]
    assert run.findings["mm-encode-pd"].stability == "deterministic 2/2"
    assert run.findings["disaggregated"].stability == "intermittent 1/3"
    assert run.findings["aggregated"].stability == ""
    matrix = table.matrix([run], ["aggregated", "mm-encode-pd", "disaggregated"])
    assert "| disaggregated | FAIL: never-registered (intermittent 1/3) |" in matrix
    assert "| mm-encode-pd | FAIL: never-registered |" in matrix
    assert "FAILED (deterministic 2/2)" in table.markdown([run], ["mm-encode-pd"])
    saved = table.from_json(table.as_json([run]))  # a resumed history keeps the rates
    assert saved[0].findings["disaggregated"].stability == "intermittent 1/3"
