"""Processes on this host: managed processes, ports, loopback, etcd/NATS infra."""
