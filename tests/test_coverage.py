"""The mode-coverage guard: every start path of the installed dynamo.sglang 1.6.1 is covered
by a catalogue topology or exempt with a reason, and a new one is named."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from discovery_harness.judge.coverage import gaps, installed_start_paths, sglang_package_dir
from discovery_harness.model.catalogue import load


def test_every_installed_start_path_is_covered_or_exempt():
    paths = installed_start_paths()
    assert len(paths) >= 18, [p.name for p in paths]  # 10 init paths and 8 beyond them
    assert gaps(paths, load()) == []
    exemptions = load().start_path_exemptions
    assert all(len(reason) > 40 for reason in exemptions.values()), exemptions


def _package_with_a_new_mode(tmp_path: Path) -> Path:
    """A copy of the installed sources where main.worker() dispatches to one more mode."""
    copy = tmp_path / "sglang"
    copy.mkdir()
    for module in sglang_package_dir().glob("*.py"):
        shutil.copy(module, copy / module.name)
    main = copy / "main.py"
    text = main.read_text()
    anchor = "    elif config.dynamo_args.diffusion_worker:\n"
    assert anchor in text
    new_branch = (
        "    elif config.dynamo_args.quantum_worker:\n"
        "        await init_quantum_worker(runtime, config)\n"
    )
    main.write_text(text.replace(anchor, new_branch + anchor, 1))
    return copy


def test_a_new_start_path_is_named_with_its_condition(tmp_path):
    paths = installed_start_paths(_package_with_a_new_mode(tmp_path))
    found = gaps(paths, load())
    assert len(found) == 1, found
    assert "init_quantum_worker (main.py:" in found[0]
    assert "when config.dynamo_args.quantum_worker" in found[0]


def test_a_declared_path_that_is_gone_is_named():
    catalogue = load()
    first = catalogue.topologies[0]
    renamed = dataclasses.replace(
        first, workers=(dataclasses.replace(first.workers[0], start_paths=("init_removed",)),)
    )
    stale = dataclasses.replace(catalogue, topologies=(renamed, *catalogue.topologies[1:]))
    found = gaps(installed_start_paths(), stale)
    assert any("'init_removed' is declared" in problem for problem in found), found
