"""Dynamo's discovery state: the observer, its sources (etcd, file store), faults."""
