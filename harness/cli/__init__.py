"""The `python -m discovery_harness` commands."""
