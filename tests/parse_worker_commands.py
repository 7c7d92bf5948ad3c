"""Feed worker command lines to the installed `dynamo.sglang.args.parse_args` (no worker runs).

stdin: a JSON list of dynamo.sglang argv lists; stdout: one JSON object per argv with the
parsed server args and Dynamo config (plain values only), or the error that parsing raised.
Run in its own process: parsing imports sglang and configures logging.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
import sys
from typing import Any

from discovery_harness_workers import torchvision_shim


def _plain(namespace: object) -> dict[str, Any]:
    """Plain fields of sglang's ServerArgs (a msgspec Struct), a stub, or Dynamo's config."""
    import msgspec

    if isinstance(namespace, msgspec.Struct):
        values = msgspec.structs.asdict(namespace)
    else:
        values = vars(namespace)
    return {
        k: (v.value if hasattr(v, "value") else v)
        for k, v in values.items()
        if isinstance(v, str | int | float | bool | type(None)) or hasattr(v, "value")
    }


def parse(argv: list[str]) -> dict[str, Any]:
    from dynamo.sglang.args import parse_args

    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(said):
            config = asyncio.run(parse_args(argv))
    except BaseException as error:  # argparse exits (its message on stderr); validation raises
        return {
            "error": f"{type(error).__name__}: {error}",
            "error_kind": type(error).__name__,
            "said": said.getvalue(),
        }
    return {
        "server": _plain(config.server_args),
        "dynamo": _plain(config.dynamo_args),
        "start_path": start_path(config),
    }


def start_path(config: Any) -> str:
    """The start path main.worker() takes for this config: its own dispatch conditions (read
    by discovery_harness.judge.coverage) evaluated on the parsed config, then the init function's
    sub-path
    for a follower node or a gateway leader."""
    from dynamo.common.constants import DisaggregationMode
    from dynamo.sglang.gateway import gateway_worker_count

    from discovery_harness.judge.coverage import dispatch_conditions, installed_start_paths

    scope = {"config": config, "DisaggregationMode": DisaggregationMode}
    chosen = next(
        name
        for name, test in dispatch_conditions()
        if test is None or eval(compile(ast.Expression(test), "<dispatch>", "eval"), scope)
    )
    known = {p.name for p in installed_start_paths()}
    if (getattr(config.server_args, "node_rank", 0) or 0) >= 1:
        return f"{chosen}/non_leader" if f"{chosen}/non_leader" in known else chosen
    if gateway_worker_count(config.server_args, config.dynamo_args) > 1:
        return f"{chosen}/gateway_leader"
    return chosen


def main() -> None:
    torchvision_shim.apply()
    argvs = json.load(sys.stdin)
    json.dump([parse(argv) for argv in argvs], sys.stdout)


if __name__ == "__main__":
    main()
