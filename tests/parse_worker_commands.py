"""Feed worker command lines to the installed `dynamo.sglang.args.parse_args` (no worker runs).

stdin: a JSON list of dynamo.sglang argv lists; stdout: one JSON object per argv with the
parsed server args and Dynamo config (plain values only), or the error that parsing raised.
Run in its own process: parsing imports sglang and configures logging.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
from typing import Any

from workers import torchvision_shim


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

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            config = asyncio.run(parse_args(argv))
    except BaseException as error:  # argparse exits; validation raises
        return {"error": f"{type(error).__name__}: {error}"}
    return {"server": _plain(config.server_args), "dynamo": _plain(config.dynamo_args)}


def main() -> None:
    torchvision_shim.apply()
    argvs = json.load(sys.stdin)
    json.dump([parse(argv) for argv in argvs], sys.stdout)


if __name__ == "__main__":
    main()
