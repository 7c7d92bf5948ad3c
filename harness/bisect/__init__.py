"""`python -m discovery_harness bisect`: which commit of a Dynamo checkout changed a verdict."""
