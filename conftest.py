"""Loads the harness's pytest plugin for every test under this project."""

pytest_plugins = ["discovery_harness.plugin"]
