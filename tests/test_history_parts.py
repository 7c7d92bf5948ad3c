"""The history's contract-parts table (harness/history/parts.py), from recorded items: not
judged, held, a declared finding seen, failed; and the record carries what was judged."""

from __future__ import annotations

import pytest

from discovery_harness.history import parts, record
from discovery_harness.history.command import write_tables
from discovery_harness.history.record import ItemFindings
from discovery_harness.history.run import ReleaseRun
from discovery_harness.model import catalogue
from discovery_harness.model.violations import BAD_INPUT_ANSWER, CANARY_REJECTED, NEVER_READY
from discovery_harness.serving.requests import BAD_INPUT, Reply

pytestmark = pytest.mark.unit

ALL = {"readiness": True, "canary": True, "lora": False, "bad_input": True}
OLD = {"readiness": False, "canary": False, "lora": False, "bad_input": True}


def _item(judged: dict[str, bool], kinds: tuple[str, ...] = (), known: tuple[str, ...] = ()):
    violations = [{"kind": k, "role": "w", "message": "m"} for k in kinds]
    outcome = "failed" if kinds else "passed"
    return ItemFindings(outcome, violations=violations, known=list(known), judged=judged)


def _part(key: str) -> parts.Part:
    return next(p for p in parts.PARTS if p.key == key)


def test_a_part_no_topology_judged_is_a_dash():
    assert parts.cell(_part("readiness"), {"aggregated": _item(OLD)}) == "-"
    assert parts.cell(_part("lora"), {"aggregated": _item(ALL)}) == "-"


def test_a_part_held_counts_its_topologies_and_names_a_declared_finding():
    items = {"aggregated": _item(ALL), "embedding": _item(ALL)}
    assert parts.cell(_part("canary"), items) == "ok (2)"
    items["mm-encode-pd"] = _item(ALL, known=(f"[{CANARY_REJECTED}] multimodal canary …",))
    assert parts.cell(_part("canary"), items) == f"ok (3), known (mm-encode-pd: {CANARY_REJECTED})"


def test_a_failed_part_names_the_topology_and_the_violation():
    items = {"aggregated": _item(ALL, (NEVER_READY, "wrong-card")), "video": _item(ALL)}
    assert parts.cell(_part("readiness"), items) == f"FAIL (aggregated: {NEVER_READY})"
    items["video"] = _item(ALL, (BAD_INPUT_ANSWER,))
    assert parts.cell(_part("bad_input"), items) == f"FAIL (video: {BAD_INPUT_ANSWER})"


def test_the_table_has_a_row_per_release_that_ran():
    runs = [
        ReleaseRun("1.0.2", "env", {"aggregated": _item(OLD)}),
        ReleaseRun("1.3.1", "env", {}, error="could not build"),
        ReleaseRun("1.6.1", "env", {"aggregated": _item(ALL)}),
    ]
    text = parts.markdown(runs)
    assert "| 1.0.2 | - | - | - | ok (1) |" in text
    assert "| 1.6.1 | ok (1) | ok (1) | - | ok (1) |" in text
    assert "1.3.1" not in text and "the era runs no canary" in text


def test_the_record_carries_what_was_judged_and_each_request_purpose():
    item = ItemFindings("passed")
    name, value = record.judged_property(ALL)
    item.add(name, value)
    reply = Reply("chat", "/v1/chat/completions", 400, None, "{}", "missing-messages", BAD_INPUT)
    for prop in record.reply_properties([reply]):
        item.add(*prop)
    assert item.judged == ALL
    assert item.requests == [
        {
            "kind": "chat",
            "shape": "missing-messages",
            "status": 400,
            "ok": True,
            "purpose": BAD_INPUT,
        }
    ]


def test_a_topology_rerun_keeps_every_topology_in_the_table(tmp_path):
    """`history --topology X --rerun` merges X's cells into the table: the tables it writes
    show every topology the runs hold, not only X."""
    findings = {"aggregated": _item(ALL), "embedding": _item(ALL, (BAD_INPUT_ANSWER,))}
    write_tables([ReleaseRun("1.6.1", "env", findings)], ["embedding"], catalogue.load(), tmp_path)
    text = (tmp_path / "history.md").read_text()
    assert "| aggregated | ok |" in text and "| embedding | FAIL: bad-input-answer |" in text
