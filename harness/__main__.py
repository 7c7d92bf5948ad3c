"""`python -m discovery_harness`: see discovery_harness.cli.app."""

import sys

from discovery_harness.common.ctrl_c import take_ctrl_c

# First, before the imports below (a second or more): a script's `cmd &` hands SIGINT ignored.
take_ctrl_c()
try:
    from discovery_harness.cli.app import main
except KeyboardInterrupt:  # Ctrl-C while importing: nothing started yet
    sys.exit(130)

sys.exit(main())
