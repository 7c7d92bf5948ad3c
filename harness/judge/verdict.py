"""A verdict: every violation found, and those a release is declared to show set aside."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.model.topology import KnownViolation
from harness.model.violations import ContractFailure, Violation

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
    strict: bool = False,
) -> Verdict:
    """The violations of this release that the catalogue declares known are reported apart
    (not failed), unless strict (self-tests see them)."""
    declared = tuple(declared)
    kept: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    for violation in violations:
        match = None
        if not strict:
            match = next(
                (
                    k
                    for k in declared
                    if k.covers(violation.kind, violation.shape) and k.applies_to(version)
                ),
                None,
            )
        if match is None:
            kept.append(violation)
        else:
            known.append((violation, match.reason))
    return Verdict(tuple(kept), tuple(known))
