"""`python -m discovery_harness up TOPOLOGY`: one topology running until Ctrl-C, like `docker
compose
up`, started by the code the tests use (discovery_harness.deployment)."""
