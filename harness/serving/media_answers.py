"""What an image or video answer must be; see discovery_harness.serving.answers for the text kinds
and
the shared `Asked`."""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

from discovery_harness.serving.answers import Asked, common

IMAGE_MAGIC = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG", b"RIFF": "WebP"}


def _media_bytes(item: dict[str, Any]) -> tuple[bytes | None, str | None]:
    encoded = item.get("b64_json")
    if not isinstance(encoded, str) or not encoded:
        return None, "no b64_json"
    try:
        return base64.b64decode(encoded, validate=True), None
    except (binascii.Error, ValueError):
        return None, "b64_json is not base64"


def image(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = [] if isinstance(data.get("created"), int) else ["no created time"]
    items = data.get("data") or []
    if len(items) != asked.count:
        return [*problems, f"{len(items)} images, expected n={asked.count}"]
    for index, item in enumerate(items):
        raw, problem = _media_bytes(item)
        if raw is None:
            problems.append(f"image {index}: {problem}")
            continue
        kind = next((name for magic, name in IMAGE_MAGIC.items() if raw.startswith(magic)), None)
        if kind is None:
            problems.append(f"image {index} is not a PNG, JPEG or WebP ({raw[:8]!r})")
            continue
        from PIL import Image

        size = Image.open(io.BytesIO(raw)).size
        if asked.size and size != asked.size:
            problems.append(
                f"image {index} is {size[0]}x{size[1]}, asked for {asked.size[0]}x{asked.size[1]}"
            )
    return problems


def video(data: dict[str, Any], asked: Asked) -> list[str]:
    problems = common(data, "video", asked)
    if data.get("status") != "completed":
        problems.append(f"status {data.get('status')!r}, expected 'completed'")
    items = data.get("data") or []
    if not items:
        return [*problems, "no video in data[]"]
    raw, problem = _media_bytes(items[0])
    if raw is None:
        problems.append(f"video: {problem}")
    elif raw[4:8] != b"ftyp":
        problems.append(f"video is not an MP4 (no ftyp box: {raw[:12]!r})")
    if items[0].get("output_format") not in (None, "mp4"):
        problems.append(f"output_format {items[0].get('output_format')!r}, expected mp4")
    return problems
