"""Talking to the frontend over HTTP: the client and the request kinds with their answer checks."""
