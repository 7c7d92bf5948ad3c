"""Declarative topologies (the catalogue) and the thin tests that run them."""
