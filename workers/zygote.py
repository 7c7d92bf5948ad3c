"""A pre-imported worker template: import the heavy modules once, then fork each CPU worker.

`python -m discovery_harness_workers.zygote --control-fd N [--listen PATH]`: imports what a CPU-tier
worker imports (torch, transformers, sglang, dynamo.sglang and every init path, the stand-ins)
while recording every environment variable read on the way, then answers on the inherited socket
N (its owner: the template ends when the owner hangs up) and on each connection to the Unix
socket PATH (a guest: another session of the run, an xdist worker, whose workers fork here too;
each client hears of its own children only):

    -> {"op": "spawn", "id": 1, "module": "discovery_harness_workers.cpu_sglang", "dynamo_argv":
[...],
        "env": {...}, "cwd": "...", "log": "..."}
    <- {"id": 1, "pid": 4321}
    <- {"exited": 4321, "code": 0}          (when a child ends; the template reaps it)

A child is made like a fresh process: its own session and process group, stdin from
/dev/null, stdout+stderr to its log, the signal dispositions of a new interpreter, its own
environment (C-level too), cwd, TMPDIR and random state, then the same launcher a fresh worker
runs (`MODULE.main(dynamo_argv)`; the harness's own options, a fault, are in the environment),
and the exit an interpreter makes as far as anything outside can see (threads joined, atexit
run, stdio flushed), without its teardown: see exit_without_teardown.

Nothing in the template may start a thread or a runtime before it forks (Dynamo's
DistributedRuntime, tokio, torch intra-op pools, tokenizers' parallelism, ZMQ contexts): the
first message, {"ready": ...}, reports the template's threads and import-time environment reads
so the harness's tests can hold it to that.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import json
import os
import random
import selectors
import signal
import socket
import sys
import tempfile
import threading
import time
from typing import Any, NoReturn

from discovery_harness_workers.import_probe import START_UP, describe_error

# What a worker imports before it registers, in every mode; importing them here is the point.
PRELOAD = (
    "torch",
    "transformers",
    "uvloop",
    "discovery_harness_workers.cpu_engine",
    "discovery_harness_workers.faults",
    "discovery_harness_workers.start",
    "discovery_harness_workers.cpu_sglang",
    "dynamo.sglang.main",
    "dynamo.sglang.args",
    "dynamo.sglang.register",
    "dynamo.sglang.request_handlers",
    "sglang.srt.server_args",
    "sglang.srt.configs.model_config",
    "sglang.srt.managers.tokenizer_manager",
    "sglang.srt.entrypoints.engine",
    "sglang.srt.disaggregation.encoder.server",
    "sglang.multimodal_gen",
)

# sglang's TokenizerManager imports every multimodal processor module of its package when a
# multimodal worker starts (~370 modules, ~0.6 s of CPU each time): once, here.
MULTIMODAL_PROCESSORS = "sglang.srt.multimodal.processors"


def _import_multimodal_processors() -> None:
    """What a multimodal TokenizerManager's start imports, through sglang's own registry
    (absent in older sglang: nothing to do there)."""
    try:
        from sglang.srt.managers.multimodal_processor import import_processors
    except ImportError:
        return
    import logging

    quiet = logging.getLogger("sglang.srt.managers.multimodal_processor")
    level, quiet.level = quiet.level, logging.ERROR  # its "ignore import error" warnings
    try:
        import_processors(MULTIMODAL_PROCESSORS)
    finally:
        quiet.setLevel(level)


_SIGNALS_RESET_IN_CHILD = (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class RecordingEnviron(os._Environ):
    """os.environ that remembers which names were read (get, [], in, getenv)."""

    reads: set[str]

    def __getitem__(self, key: str) -> str:
        self.reads.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.reads.add(key)
        return super().__contains__(key)


def record_environ_reads() -> RecordingEnviron:
    """Swap os.environ (and os.getenv's view of it) for a recording twin sharing its data."""
    recording = RecordingEnviron.__new__(RecordingEnviron)
    recording.__dict__.update(os.environ.__dict__)
    recording.reads = set()
    os.environ = recording  # noqa: B003 (same data, so nothing to clear: only reads recorded)
    return recording


class TemplateImportFailed(Exception):
    """An import of the template's failed: `described` is what the harness prints."""

    def __init__(self, described: dict[str, Any]) -> None:
        super().__init__(described["message"])
        self.described = described


def preload(also: tuple[str, ...] = ()) -> tuple[set[str], float]:
    """Import PRELOAD (and `also`) with the stand-ins installed; return (env names read,
    seconds)."""
    started = time.monotonic()
    recording = record_environ_reads()
    importing = START_UP
    try:
        from discovery_harness_workers import start

        start.prepare(with_fault=False)  # a template runs no fault: each child gets its own
        for importing in (*PRELOAD, *also):
            importlib.import_module(importing)
        importing = MULTIMODAL_PROCESSORS
        _import_multimodal_processors()
    except Exception as failed:
        raise TemplateImportFailed(describe_error(failed, importing)) from failed
    finally:
        reads = set(recording.reads)  # the twin stays os.environ: it is the real one, too
    return reads, time.monotonic() - started


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall((json.dumps(message) + "\n").encode())


def _become_worker(request: dict[str, Any], close_fds: list[int]) -> int:
    """In the forked child: turn the template into the requested worker, run it, and return
    its exit code (the caller exits the interpreter normally with it)."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    for sig in _SIGNALS_RESET_IN_CHILD:
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a new interpreter has it
    for fd in close_fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(null)
    os.chdir(request["cwd"])
    os.environ.clear()  # unsetenv/putenv too: Dynamo's Rust side reads the C environment
    os.environ.update(request["env"])
    refresh_after_fork()
    argv = list(request["dynamo_argv"])
    sys.argv = ["-m", *argv]  # what `python -m MODULE ARGV` shows its code
    launcher = importlib.import_module(request["module"])  # pre-imported: the CPU launcher

    try:
        launcher.main(argv)
    except SystemExit as exit_request:
        code = exit_request.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


def exit_without_teardown(code: int) -> NoReturn:
    """End a forked worker the way the interpreter ends, as far as anyone can observe: wait for
    non-daemon threads, run the atexit handlers (logging's flush, Dynamo's and sglang's
    clean-ups), flush stdio; then _exit with the code, skipping module teardown and the last
    garbage collection. In a child of the template those touch every inherited object and so
    copy the template's whole heap page by page: ~3 s of CPU per worker, measured, for
    nothing a worker's peers, etcd or the frontend can see."""
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def refresh_after_fork() -> None:
    """Per-process state the template computed from its own environment or pid, reset so the
    worker computes it from its own (see REREAD_AFTER_FORK)."""
    tempfile.tempdir = None  # cached from the template's TMPDIR on first use
    random.seed()
    with contextlib.suppress(ImportError):
        import numpy

        numpy.random.seed()
    with contextlib.suppress(ImportError):
        import torch

        torch.seed()


# Environment variables the template may have read at import, re-read in every child by
# refresh_after_fork: a worker may differ in these from the template.
REREAD_AFTER_FORK = frozenset({"TMPDIR", "TEMP", "TMP"})


def serve(owner: socket.socket, listener: socket.socket | None, ready: dict[str, Any]) -> None:
    """Fork on request, reap children, report each exit to the client that asked for the
    child; greet each guest with `ready`; return when the owner hangs up."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the selector through the pipe
    selector = selectors.DefaultSelector()
    selector.register(owner, selectors.EVENT_READ, "client")
    selector.register(wake_read, selectors.EVENT_READ, "child")
    if listener is not None:
        selector.register(listener, selectors.EVENT_READ, "listener")
    pending: dict[socket.socket, bytes] = {owner: b""}
    children: dict[int, socket.socket | None] = {}  # pid -> who asked (None: gone since)
    while True:
        for key, _ in selector.select():
            if key.data == "child":
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
                _reap(children)
                continue
            if key.data == "listener":
                assert listener is not None
                with contextlib.suppress(OSError):
                    guest, _ = listener.accept()
                    if _send_to(guest, ready):
                        selector.register(guest, selectors.EVENT_READ, "client")
                        pending[guest] = b""
                    else:
                        guest.close()
                continue
            conn = key.fileobj
            assert isinstance(conn, socket.socket)
            chunk = b""
            with contextlib.suppress(OSError):
                chunk = conn.recv(65536)
            if not chunk:
                if conn is owner:
                    return
                _forget(conn, selector, pending, children)
                continue
            pending[conn] += chunk
            while b"\n" in pending[conn]:
                line, pending[conn] = pending[conn].split(b"\n", 1)
                try:
                    request = json.loads(line)
                except ValueError:  # that client is broken, not the run: drop it alone
                    if conn is owner:
                        raise
                    _forget(conn, selector, pending, children)
                    break
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    # Detached, so no socket object can later close an fd the worker reuses.
                    inherited = [s.detach() for s in [*pending, listener] if s is not None]
                    code = _become_worker(request, [*inherited, wake_read, wake_write])
                    exit_without_teardown(code)
                children[pid] = conn
                _send_to(conn, {"id": request["id"], "pid": pid})
        _reap(children)


def _forget(
    guest: socket.socket,
    selector: selectors.BaseSelector,
    pending: dict[socket.socket, bytes],
    children: dict[int, socket.socket | None],
) -> None:
    """A guest hung up. Its session stops its workers before it does, so any child still
    running belongs to a session that crashed: killed (its whole group), and reaped here."""
    selector.unregister(guest)
    del pending[guest]
    guest.close()
    for pid, asked in children.items():
        if asked is guest:
            children[pid] = None
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


def _send_to(conn: socket.socket, message: dict[str, Any]) -> bool:
    """Send; False if that client is gone (its hang-up is read next)."""
    try:
        _send(conn, message)
    except OSError:
        return False
    return True


def _reap(children: dict[int, socket.socket | None]) -> None:
    for pid, asked in list(children.items()):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            del children[pid]
            continue
        if done:
            del children[pid]
            if asked is not None:
                _send_to(asked, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--also-import", action="append", default=[], metavar="MODULE")
    parser.add_argument("--listen", metavar="PATH", help="a Unix socket for guests")
    args = parser.parse_args()
    conn = socket.socket(fileno=args.control_fd)
    listener = None
    if args.listen:  # before the imports: a guest that connects early waits in the backlog
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(args.listen)
        listener.listen(socket.SOMAXCONN)
    try:
        reads, seconds = preload(tuple(args.also_import))
    except TemplateImportFailed as failed:  # said in one line there; the traceback is logged
        _send(conn, {"import_failed": failed.described})
        raise
    ready = {
        "ready": os.getpid(),
        "import_s": round(seconds, 3),
        "threads": [t.name for t in threading.enumerate()],
        "os_threads": len(os.listdir(f"/proc/{os.getpid()}/task")),
        "env_reads": sorted(reads),
        "reread": sorted(REREAD_AFTER_FORK),
        "modules": len(sys.modules),
    }
    _send(conn, ready)
    serve(conn, listener, ready)


if __name__ == "__main__":
    main()
