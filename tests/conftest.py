"""Unit tests of the harness itself are marked `unit` unless they say otherwise."""

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("e2e") is None:
            item.add_marker(pytest.mark.unit)
