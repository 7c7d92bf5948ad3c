"""os.environ as it was: every process the harness starts inherits os.environ, and a worker
forked from the template must not differ from it in what it read at import; whatever a test or
a library loaded along the way sets there (torch sets TORCHINDUCTOR_CACHE_DIR when transformers
is imported) must not outlive it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Put os.environ back as it was on entry, whatever the block did to it."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        if dict(os.environ) != saved:
            os.environ.clear()
            os.environ.update(saved)
