"""Run the real `dynamo.sglang` worker on CPU: `python -m discovery_harness_workers.cpu_sglang
ARGV`.

Only sglang's GPU classes are swapped for the stand-ins in `discovery_harness_workers.cpu_engine`;
argument
parsing, registration, serving and shutdown are Dynamo's own code. ARGV is the Dynamo argv,
unchanged (the harness's command builder, discovery_harness.runtime.launch, adds `--device cpu`);
the
harness's own option, a fault, comes by name from the environment (workers/faults.py).
"""

from __future__ import annotations

import inspect
import sys

from discovery_harness_workers import start


def main(argv: list[str] | None = None) -> None:
    dynamo_argv = list(sys.argv[1:] if argv is None else argv)
    start.prepare()

    import uvloop
    from dynamo.sglang.main import worker

    # What dynamo.sglang sees as its command line (the gateway re-runs sys.argv[1:] in its
    # children): the Dynamo argv alone, as under `python -m dynamo.sglang`.
    sys.argv = [sys.argv[0], *dynamo_argv]
    # 0.x parses sys.argv itself; 1.x takes the argv.
    uvloop.run(worker(dynamo_argv) if inspect.signature(worker).parameters else worker())


if __name__ == "__main__":
    main()
