"""Interpreter start-up hook of CPU-tier worker processes (on their PYTHONPATH).

Some start paths make a worker spawn more `python -m dynamo.sglang` processes (the gateway's
children): those never pass through the CPU launcher, so this hook gives them the same
stand-ins when HARNESS_STAND_INS=1. The variable is set for workers only, never for the
worker template, whose own imports must stay recorded (workers/zygote.py).
"""

import os

if os.environ.get("HARNESS_STAND_INS") == "1":
    from discovery_harness_workers import start

    # The worker's start-up sequence; the fault, if any, too (a gateway's children inherit it).
    start.prepare()
