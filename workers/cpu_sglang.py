"""Run the real `dynamo.sglang` worker on CPU: `python -m workers.cpu_sglang ARGV`.

Only sglang's GPU classes are swapped for the stand-ins in `workers.cpu_engine`; argument
parsing, registration, serving and shutdown are Dynamo's own code. ARGV is the Dynamo argv,
unchanged (the harness's command builder, harness.runtime.launch, adds `--device cpu`); the
harness's own option, a fault, comes by name from the environment (workers/faults.py).
"""

from __future__ import annotations

import inspect
import sys

from workers import torchvision_shim


def install_stand_ins() -> None:
    """Point every name Dynamo looks sglang's GPU classes up by at the CPU stand-ins."""
    import sglang
    import sglang.multimodal_gen as multimodal_gen
    import sglang.srt.disaggregation.encoder.server as encoder_server
    import sglang.srt.entrypoints.engine as engine_module

    from workers.cpu_engine import CpuDiffGenerator, CpuEngine, CpuMMEncoder

    sglang.Engine = CpuEngine
    engine_module.Engine = CpuEngine
    encoder_server.MMEncoder = CpuMMEncoder
    multimodal_gen.DiffGenerator = CpuDiffGenerator


def install_release_stand_ins() -> None:
    """The stand-ins of the installed release (workers.release_stand_ins says which)."""
    from workers import release_stand_ins

    release_stand_ins.install(release_stand_ins.choice_for(release_stand_ins.installed_release()))


def main(argv: list[str] | None = None) -> None:
    dynamo_argv = list(sys.argv[1:] if argv is None else argv)
    torchvision_shim.apply()
    install_release_stand_ins()

    from workers import faults

    faults.install_from_environment()

    import uvloop
    from dynamo.sglang.main import worker

    # What dynamo.sglang sees as its command line (the gateway re-runs sys.argv[1:] in its
    # children): the Dynamo argv alone, as under `python -m dynamo.sglang`.
    sys.argv = [sys.argv[0], *dynamo_argv]
    # 0.x parses sys.argv itself; 1.x takes the argv.
    uvloop.run(worker(dynamo_argv) if inspect.signature(worker).parameters else worker())


if __name__ == "__main__":
    main()
