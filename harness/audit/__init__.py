"""`python -m discovery_harness audit`: judge a running Dynamo deployment the harness did not start,
from its discovery store (etcd, or the file backend's directory) and its frontend. Read-only:
it never writes to etcd and sends requests only with --probe."""
