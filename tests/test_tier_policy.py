"""The tiers are policies, not names: the plan's tier table says what the code does (it is
generated from the policies the code reads), and no code decides by comparing tier names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from discovery_harness.deployment.options import Settings
from discovery_harness.model.catalogue import load
from discovery_harness.model.topology import Scenario
from discovery_harness.runtime.spawn import FRESH, ZYGOTE, spawn_mode
from discovery_harness.runtime.tier import CPU, GPU, TIERS, TierPolicy, tier_differences

ROOT = Path(__file__).resolve().parent.parent
TIER_NAMES = set(TIERS)
POLICY_NAMES = {"CPU", "GPU"}


def _row(aspect: str) -> dict[str, str]:
    row = next(d for d in tier_differences() if d.aspect == aspect)
    return {"cpu": row.cpu, "gpu": row.gpu}


@pytest.mark.parametrize("tier", [CPU, GPU], ids=lambda t: t.name)
def test_the_deadlines_row_says_the_deadlines_a_run_uses(tier: TierPolicy):
    settings = Settings(tier=tier)
    text = _row("deadlines")[tier.name]
    assert f"card grace {settings.card_grace:.0f} s" in text
    assert f"listed and served {settings.list_deadline:.0f} s" in text
    scenario = Scenario.packed(load().topology("aggregated"))
    forked, fresh = (settings.register_deadline(scenario, forked=f) for f in (True, False))
    if tier.deadlines.register_fresh_s is None:
        assert forked == fresh == scenario.placement.start_timeout_s
        assert "the layout's start timeout" in text
    else:
        assert f"register {forked:.0f} s from the template, {fresh:.0f} s fresh" in text


def test_the_cpu_tiers_defaults_are_the_measured_ones():
    """The numbers docs/layout.md ("Deadlines") and the option help give (issue 17: the table
    said 120/20)."""
    assert _row("deadlines")["cpu"].startswith(
        "register 30 s from the template, 120 s fresh, card grace 5 s"
    )


def test_the_table_follows_the_policy_it_is_made_from():
    """A policy changed is a table changed: nothing to keep in step by hand."""
    changed = TierPolicy(**{**vars(CPU), "template": False, "device_argv": ("--device", "xpu")})
    described = changed.describe()
    assert described["process"] == GPU.describe()["process"]
    assert described["device"] == "--device xpu appended"


def test_spawn_auto_follows_the_policy():
    assert spawn_mode("auto", CPU) == ZYGOTE
    assert spawn_mode("auto", CPU, own_dynamo=False) == FRESH
    assert spawn_mode("auto", GPU) == FRESH
    with pytest.raises(ValueError, match="--spawn zygote exists on the CPU tier only"):
        spawn_mode(ZYGOTE, GPU)


def _names_a_tier(node: ast.expr) -> bool:
    """ "cpu" / "gpu", or the policies themselves (CPU, tier.GPU)."""
    if isinstance(node, ast.Constant):
        return node.value in TIER_NAMES
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return name in POLICY_NAMES


def _tier_comparisons(source: str) -> list[int]:
    """Lines deciding by which tier it is (tier == "cpu", "gpu" != t, t in (CPU,), t is GPU)
    instead of by what the tier's policy says."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for operand in [node.left, *node.comparators]:
            collection = isinstance(operand, ast.Tuple | ast.List | ast.Set)
            if any(map(_names_a_tier, operand.elts if collection else [operand])):
                lines.append(node.lineno)
                break
    return lines


def test_no_code_decides_by_the_tiers_name():
    found = {
        str(path.relative_to(ROOT)): lines
        for folder in ("harness", "workers", "scenarios", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (lines := _tier_comparisons(path.read_text()))
    }
    assert found == {}, (f"decide by the tier's policy (discovery_harness.runtime.tier), not its "
                         f"name: {found}")


def test_the_comparison_finder_finds_each_shape():
    """The guard above can fail: each shape of a tier comparison is found, and a policy's
    field is not one."""
    source = (
        'a = tier == "cpu"\nb = "gpu" != t\nc = t in ("cpu", "x")\nd = t.name == "gpu"\n'
        "e = t is tier.GPU\nf = t != CPU\ng = t.gpus == True\nh = mode == 'zygote'\n"
    )
    assert _tier_comparisons(source) == [1, 2, 3, 4, 5, 6]
