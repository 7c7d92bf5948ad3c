"""One TLS context for every httpx client the harness makes.

httpx builds a context for each client (loading the CA bundle: ~20 ms of CPU), plain HTTP
included, unless it is handed one; the harness makes clients by the thousand (each
deployment's watches and client, each poll of a starting process): ~5 s of CPU in the
README's run. The same verification as httpx's default, built once (a context is safe to
share between clients and threads).
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def shared_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()
