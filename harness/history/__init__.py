"""The conformance history: the catalogue run on several Dynamo releases, one table."""
