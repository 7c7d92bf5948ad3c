"""The `python -m harness` commands."""
