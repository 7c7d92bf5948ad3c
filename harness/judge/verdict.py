"""A verdict: every violation found, and those a release is declared to show set aside."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from discovery_harness.model.events import Events
from discovery_harness.model.topology import KnownViolation
from discovery_harness.model.violations import ContractFailure, Violation

CONFORMANT, FAILED, KNOWN = "conformant", "failed", "known-violations"


@dataclass(frozen=True)
class Verdict:
    violations: tuple[Violation, ...] = ()
    known: tuple[tuple[Violation, str], ...] = ()  # each with the declared reason

    @property
    def conformant(self) -> bool:
        return not self.violations

    @property
    def outcome(self) -> str:
        if self.violations:
            return FAILED
        return KNOWN if self.known else CONFORMANT

    def raise_if_failed(self, topology: str) -> None:
        if self.violations:
            raise ContractFailure(topology, list(self.violations))


def set_aside_known(
    violations: Iterable[Violation],
    declared: Iterable[KnownViolation],
    version: str,
    strict: bool | Collection[str] = False,
    events: Events | None = None,
) -> Verdict:
    """The violations of this release that the catalogue declares known are reported apart
    (not failed), unless strict: True for every role, or the roles named (a self-test sees
    the known violations of the roles it injects a fault into, while a timing-dependent one
    of another role, 1.6.1's encoder window, stays set aside). A declaration with a window
    excuses a violation only when every occurrence lies inside it (`events`: the
    deployment's)."""
    declared = tuple(declared)
    events = events or Events()
    kept: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    for violation in violations:
        match = None
        if not (strict is True or (strict and violation.role in strict)):
            match = next((k for k in declared if _excuses(k, violation, version, events)), None)
        if match is None:
            kept.append(violation)
        else:
            known.append((violation, _reason(match)))
    return Verdict(tuple(kept), tuple(known))


def _excuses(known: KnownViolation, violation: Violation, version: str, events: Events) -> bool:
    if not known.covers(violation.kind, violation.shape) or not known.applies_to(version):
        return False
    window = known.window
    return window is None or window.covers(violation.at, events.times(window.after))


def _reason(known: KnownViolation) -> str:
    where = f" ({known.window.describe()})" if known.window else ""
    cites = f" [{', '.join(known.cites)}]" if known.cites else ""
    return f"{known.reason}{where}{cites}"
