"""Installed as `discovery_harness.ci`: setup.sh and requirements/, the files the harness's
commands read (history builds release environments with them; preflight reads the pins)."""
