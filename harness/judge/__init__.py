"""The judge: observed state in, a verdict out.

Nothing here knows how the processes were started. The `deploy` fixture
(discovery_harness.deployment)
hands it what it watched of a deployment it launched; `python -m discovery_harness audit` hands it
what
it read of a deployment someone else launched. Both get the same violation kinds and texts.

- `deployment`: the verdict on a deployment whose workers and contracts are known.
- `modes`: which catalogue topology and role each discovered worker is, from its card.
- `discovered`: the verdict on whatever is in discovery (the audit's judge).
- `verdict`: the result, every violation and the known ones set aside.
"""

from discovery_harness.judge.verdict import Verdict

__all__ = ["Verdict"]
