"""`python -m harness`: see harness.cli.app."""

import sys

from harness.cli.app import main

sys.exit(main())
