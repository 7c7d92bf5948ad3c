"""Imported into a worker template by tests/test_zygote.py: a module that reads a variable and
starts a thread at import, as a library might. The template must report both."""

import os
import threading

READ_AT_IMPORT = os.environ.get("HARNESS_TEST_READ_AT_IMPORT", "unset")
threading.Thread(target=threading.Event().wait, name="started-at-import", daemon=True).start()
