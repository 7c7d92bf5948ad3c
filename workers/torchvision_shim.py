"""Let PyPI's CUDA-linked torchvision import beside a CPU torch.

Its compiled extension does not load next to a CPU build, and torchvision's Python side then
registers fake kernels for `torchvision::nms` / `torchvision::qnms`, which fails with
"operator torchvision::nms does not exist". Declaring the two schemas first is enough for
everything dynamo.sglang imports. Applied only inside worker processes.
"""

from __future__ import annotations

import sys

_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
_library = None  # kept alive: dropping the Library object would unregister the schemas


def apply() -> None:
    global _library
    if _library is not None or "torchvision" in sys.modules:
        return
    import torch

    if torch.version.cuda:  # a CUDA torch loads torchvision's real kernels
        return
    _library = torch.library.Library("torchvision", "FRAGMENT")
    for schema in _SCHEMAS.values():
        _library.define(schema)
