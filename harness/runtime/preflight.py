"""Preflight of the GPU job: everything that would stop a GPU-tier run before any worker
starts, checked in seconds and reported one line each (`python -m discovery_harness preflight`).

Standard library only: it runs first, in the runtime image's own Python, before the
harness's dependencies are installed. Checks: the image is the one asked for (its ai-dynamo
version is the tag's); the driver suits the CUDA build of the image's torch; GPUs are
visible, with their memory; the installed ai-dynamo / sglang pair is one this checkout's
contracts are proven on; etcd and NATS answer; the places the job writes are writable.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import socket
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from discovery_harness.common import locations
from discovery_harness.runtime import gpu_probe, gpus


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    needs_gpu: bool = False  # a check only a GPU machine can pass (a rehearsal may allow it)

    def line(self, allow_no_gpu: bool) -> str:
        if self.ok:
            mark = "ok"
        elif self.needs_gpu and allow_no_gpu:
            mark = "NO GPU (allowed)"
        else:
            mark = "FAILED"
        return f"preflight: [{mark}] {self.name}: {self.detail}"


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def proven_releases(requirements: Path | None = None) -> dict[str, str]:
    """ai-dynamo version -> the sglang version its contracts were proven with (the pins of
    ci/requirements: the harness's own stack and every release environment)."""
    requirements = requirements or locations.requirements_dir()
    pairs: dict[str, str] = {}
    for pins in [requirements / "dynamo-nodeps.txt", *requirements.glob("releases/*/nodeps.txt")]:
        text = pins.read_text() if pins.is_file() else ""
        dynamo = re.search(r"^ai-dynamo==(\S+)", text, re.MULTILINE)
        sglang = re.search(r"^sglang==(\S+)", text, re.MULTILINE)
        if dynamo and sglang:
            pairs[dynamo.group(1)] = sglang.group(1)
    return pairs


def check_versions(dynamo: str | None, sglang: str | None, proven: dict[str, str]) -> Check:
    installed = f"ai-dynamo {dynamo or 'not installed'}, sglang {sglang or 'not installed'}"
    known = ", ".join(f"ai-dynamo {d} with sglang {s}" for d, s in sorted(proven.items()))
    ok = dynamo is not None and proven.get(dynamo) == sglang
    detail = installed if ok else f"{installed}: contracts exist for {known} only"
    return Check("stack versions", ok, detail)


def check_image(image: str | None, dynamo: str | None) -> Check:
    """The image asked for (HARNESS_IMAGE, e.g. ...sglang-runtime:1.6.1) holds that release."""
    if not image:
        return Check("image", True, "HARNESS_IMAGE not set: not compared")
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    release = re.match(r"v?(\d+\.\d+\.\d+)", tag)
    if release is None:
        return Check("image", True, f"{image}: tag {tag!r} names no release; not compared")
    ok = release.group(1) == dynamo
    return Check("image", ok, f"{image} asked for; ai-dynamo {dynamo or 'absent'} installed")


def driver_problem(driver: str | None = None, cuda: str | None = None) -> str | None:
    """Why the NVIDIA driver cannot run this torch's CUDA build, or None (gpu_probe's check,
    the driver and the workers' CUDA build read here when not given)."""
    if driver is None:
        rows = gpus.nvidia_smi_query("driver_version")
        driver = rows[0][0] if rows else None
    return gpu_probe.driver_problem(driver, cuda or _workers_cuda())


def _workers_cuda() -> str | None:
    """The CUDA build of the workers' torch, as the GPU probe reads it (their interpreter)."""
    cuda = gpu_probe.cuda_init(sys.executable).get("cuda")
    return str(cuda) if cuda else None


def check_driver() -> Check:
    rows = gpus.nvidia_smi_query("driver_version")
    if not rows:
        return Check("driver", False, "nvidia-smi lists no driver", True)
    cuda = _workers_cuda()
    problem = driver_problem(rows[0][0], cuda)
    detail = problem or f"driver {rows[0][0]}, torch built with CUDA {cuda or 'none (CPU)'}"
    return Check("driver", problem is None and cuda is not None, detail, True)


def check_gpus() -> Check:
    """The GPU probe the run itself takes its GPUs from (runtime.gpu_probe)."""
    found = gpu_probe.probe()
    visible = found.usable
    rows = {r[0]: r for r in gpus.nvidia_smi_query("index", "name", "memory.total")}
    if not found.visible:
        where = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
        return Check("gpus", False, f"none visible (CUDA_VISIBLE_DEVICES={where!r})", True)
    if found.problem:
        return Check("gpus", False, f"not usable: {found.problem}", True)
    described = [
        f"{gpu} {rows[gpu][1]} {float(rows[gpu][2]) / 1024:.1f} GiB" if gpu in rows else gpu
        for gpu in visible
    ]
    return Check("gpus", True, f"{len(visible)} visible: " + "; ".join(described), True)


def _etcd_answers(endpoint: str) -> str:
    with urllib.request.urlopen(endpoint.rstrip("/") + "/health", timeout=5) as answer:
        return json.loads(answer.read()).get("health", "?")


def _nats_answers(url: str) -> str:
    host, _, port = url.split("://")[-1].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        return conn.recv(4096).decode(errors="replace").split(" ", 1)[0]


def check_service(name: str, variable: str, probe: Callable[[str], str]) -> Check:
    url = os.environ.get(variable)
    if not url:
        return Check(name, True, f"{variable} not set: the harness starts its own")
    try:
        said = probe(url.split(",")[0])
    except (OSError, ValueError) as error:
        return Check(name, False, f"{url} does not answer: {error}")
    return Check(name, said in ("true", "INFO"), f"{url} answers {said!r}")


def check_writable(paths: dict[str, str]) -> Check:
    problems = []
    for label, path in paths.items():
        where = Path(path)
        try:
            where.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=where).close()
        except OSError as error:
            problems.append(f"{label} {where}: {error.strerror or error}")
    shown = ", ".join(f"{k} {v}" for k, v in paths.items())
    return Check("writable", not problems, "; ".join(problems) or shown)


def run_checks(writable: dict[str, str]) -> list[Check]:
    dynamo, sglang = _version("ai-dynamo"), _version("sglang")
    return [
        check_image(os.environ.get("HARNESS_IMAGE"), dynamo),
        check_versions(dynamo, sglang, proven_releases()),
        check_driver(),
        check_gpus(),
        check_service("etcd", "ETCD_ENDPOINTS", _etcd_answers),
        check_service("nats", "NATS_SERVER", _nats_answers),
        check_writable(writable),
    ]


class _OneLineParser(argparse.ArgumentParser):
    """Bad input is one line and exit 4, like every harness command (standard library only:
    the preflight runs before anything is installed)."""

    def error(self, message: str) -> NoReturn:
        self.exit(4, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _OneLineParser(prog="python -m discovery_harness preflight", description=__doc__)
    parser.add_argument(
        "--allow-no-gpu",
        action="store_true",
        help="report a missing GPU or driver without failing (a rehearsal without a GPU)",
    )
    parser.add_argument(
        "--writable",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="a folder the job writes (reports, HF cache, basetemp); default: $TMPDIR",
    )
    args = parser.parse_args(argv)
    writable = dict(item.split("=", 1) for item in args.writable) or {"tmp": tempfile.gettempdir()}
    checks = run_checks(writable)
    for check in checks:
        print(check.line(args.allow_no_gpu))
    failed = [c for c in checks if not c.ok and not (c.needs_gpu and args.allow_no_gpu)]
    if failed:
        print(f"preflight: FAILED: {', '.join(c.name for c in failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
