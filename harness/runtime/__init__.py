"""Things the harness runs or resolves for a deployment: launch commands, GPUs, models."""
