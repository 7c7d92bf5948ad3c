"""`python -m discovery_harness`: see discovery_harness.cli.app."""

import sys

from discovery_harness.cli.app import main

sys.exit(main())
