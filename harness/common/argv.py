"""A flag's value in a worker's argv, read as argparse keeps it: the card's context length
(serving.model_facts) and its runtime config (judge.self_description) are judged by it."""

from __future__ import annotations

from collections.abc import Sequence


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The last value given to `flag` (`--flag value` or `--flag=value`), as argparse keeps it."""
    value = None
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


def int_flag(argv: Sequence[str], flag: str) -> int | None:
    """The flag's last value as a non-negative int; None when absent or not a number."""
    value = flag_value(argv, flag)
    return int(value) if value is not None and value.isdigit() else None
