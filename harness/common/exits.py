"""The exit code every harness command gives bad input: 4, as pytest's usage error (its
options are the harness's too), one line, nothing started. The audit gives it as well when
the store or frontend it was pointed at does not answer: nothing could be judged."""

USAGE_ERROR = 4
