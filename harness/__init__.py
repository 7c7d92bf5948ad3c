"""Discovery-conformance harness for Dynamo's SGLang backend."""
