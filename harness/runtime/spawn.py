"""How a CPU-tier worker process comes to be: a fresh interpreter, or a fork of the template.

`fresh` starts `python -m discovery_harness_workers.cpu_sglang ARGV` (what the GPU tier does with
`dynamo.sglang`): ~6-15 s of imports before the first line of Dynamo's code runs. `zygote`
keeps one pre-imported template per run (workers/zygote.py) and forks each worker
from it: the template is handed the worker's command whole (module, Dynamo argv, environment,
as named fields of a JSON request) and the child gets its own session, log and TMPDIR, then
runs the same launcher and the real `dynamo.sglang` entry point, in well under a second. The
harness still manages the child like any other process: its pid, its process group, SIGTERM
then SIGKILL; its exit code comes from the template, which is its parent.

One template can serve every session of a run: its owner (the session, or the xdist controller
for its workers' sessions) starts it with a Unix socket, and a guest session joins it there
(`Zygote.join`); each hears of its own children only, and the template ends with its owner.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from discovery_harness.common.deadline import Deadline
from discovery_harness.processes.managed import ManagedProcess, WaitTimeout
from discovery_harness.runtime import template_socket
from discovery_harness.runtime.import_probe import ProbeResult
from discovery_harness.runtime.launch import WorkerCommand
from discovery_harness.runtime.tier import TierPolicy

FRESH, ZYGOTE = "fresh", "zygote"
SPAWN_MODES = (FRESH, ZYGOTE)
ZYGOTE_MODULE = "discovery_harness_workers.zygote"
# the only launcher a template has pre-imported
ZYGOTE_RUNS = "discovery_harness_workers.cpu_sglang"
LOST = -255  # exit code reported for a child whose template died before it
# The template's own imports, once a session (slow on a cold page cache): not part of any
# worker's start, so a deployment's deadline begins only once the template can fork.
TEMPLATE_IMPORT_DEADLINE_S = 180.0
FORK_REPLY_DEADLINE_S = 30.0
JOIN_DEADLINE_S = 30.0  # for the template's socket to accept a guest (bound before imports)


class ForkedChild:
    """A worker forked by the template, with the part of Popen's interface the harness uses."""

    def __init__(self, pid: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self._done = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def exited(self, code: int) -> None:
        self.returncode = code
        self._done.set()


@dataclass(frozen=True)
class TemplateInfo:
    """What the template reported once its imports were done."""

    pid: int
    import_s: float
    threads: tuple[str, ...]  # Python threads alive in the template
    os_threads: int  # kernel tasks of the template process (1 = single-threaded)
    env_reads: frozenset[str]  # environment variables read while importing
    reread: frozenset[str]  # of those, what every child re-reads after the fork
    modules: int

    def problems(self) -> list[str]:
        """Why forking from this template would not give a faithful worker."""
        if self.os_threads == 1 and self.threads == ("MainThread",):
            return []
        return [
            f"the worker template (pid {self.pid}) runs {self.os_threads} OS thread(s) "
            f"(Python: {', '.join(self.threads)}) before it forks: a thread or runtime started "
            "at import (tokio, a torch or tokenizers pool, a ZMQ context) does not survive fork"
        ]

    def frozen_for(self, template_env: dict[str, str], worker_env: dict[str, str]) -> list[str]:
        """Variables read at import whose value this worker would see differently: frozen at
        the template's value in a forked child."""
        return sorted(
            name
            for name in self.env_reads - self.reread
            if template_env.get(name) != worker_env.get(name)
        )


class TemplateUnfit(RuntimeError):
    """Forking from the template would not give a faithful worker (threads, frozen env)."""


class TemplateGone(RuntimeError):
    """The run's template, owned by another session, ended under this one (a guest's)."""


class TemplateImportFailed(RuntimeError):
    """The template could not import the workers' start path: the environment's fault, said
    in one line (no worker of the session can start)."""


def import_refusal(error: dict[str, Any], python: str) -> str:
    """One line naming the environment, the module and the importing line."""
    failed = ProbeResult({}, {}, 0.0, error)
    return (
        f"the harness's own environment ({python}) cannot import the workers' start path: "
        f"{failed.advice('(bash ci/setup.sh)')} ({failed.failure()}); no worker can start"
    )


class Zygote:
    """One pre-imported template process and the children forked from it (this session's)."""

    def __init__(
        self,
        env: dict[str, str],
        log_path: Path,
        cwd: Path,
        also_import: tuple[str, ...] = (),
        address: Path | None = None,
    ) -> None:
        self._env = env
        self._also_import = also_import
        self.log_path = log_path
        self._cwd = cwd
        self.address = address  # the Unix socket guests join it at, if any
        self._conn: socket.socket | None = None
        self.proc: ManagedProcess | None = None  # None: a guest's (another session owns it)
        self._guest_of: int | None = None  # a guest's: the template's pid
        self._gone = threading.Event()  # the template hung up (or exited)
        self.info: TemplateInfo | None = None
        self.import_failed: dict[str, Any] | None = None  # what failed, as the template said
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._replies: dict[int, ForkedChild | None] = {}
        self._reply_ready = threading.Condition()
        self._children: dict[int, ForkedChild] = {}
        self._reader: threading.Thread | None = None

    @classmethod
    def join(
        cls, address: Path, env: dict[str, str], log_path: Path, pid: int, cwd: Path
    ) -> Zygote:
        """A guest of the template another session of the run owns (started with `address`,
        `env`, its log at `log_path`, as process `pid`); its workers start in `cwd`."""
        guest = cls(env, log_path, cwd, address=address)
        guest._guest_of = pid
        conn = template_socket.connect(address, pid, Deadline(JOIN_DEADLINE_S))
        if conn is None:  # it ended already: wait_ready says why, from its log
            guest._gone.set()
            guest._ready.set()
            return guest
        guest._read_from(conn)
        return guest

    @property
    def pid(self) -> int:
        """The template's pid, known from its start (`info` only once its imports are done)."""
        if self.proc is not None:
            return self.proc.pid
        assert self._guest_of is not None
        return self._guest_of

    @property
    def hf_home(self) -> Path:
        """The Hugging Face home it imported with: every worker forked from it has it too."""
        return Path(self._env["HF_HOME"])

    def start(self) -> Zygote:
        parent, child = socket.socketpair()
        listen = ("--listen", str(self.address)) if self.address is not None else ()
        self.proc = ManagedProcess(
            role="zygote",
            argv=[
                sys.executable,
                "-m",
                ZYGOTE_MODULE,
                "--control-fd",
                str(child.fileno()),
                *(arg for name in self._also_import for arg in ("--also-import", name)),
                *listen,
            ],
            env=self._env,
            log_path=self.log_path,
            cwd=self._cwd,
            pass_fds=(child.fileno(),),
        ).start()
        child.close()
        self._read_from(parent)
        return self

    def _read_from(self, conn: socket.socket) -> None:
        """The template's messages on `conn`, read by a thread of their own from now on."""
        self._conn = conn
        self._reader = threading.Thread(target=self._read, name="zygote-reader", daemon=True)
        self._reader.start()

    def wait_ready(self, deadline: Deadline) -> TemplateInfo:
        """Block until the template has imported everything; fail at once if it died (in
        one line, TemplateImportFailed, if an import failed), and with TemplateUnfit if it
        runs threads."""
        waiting_for = "its imports (the worker template)"
        while not self._ready.is_set() and self._alive():
            if deadline.expired:
                raise self._timeout(waiting_for, deadline.seconds)
            self._ready.wait(deadline.slice(0.25))
        if self.info is None and self._reader is not None:
            self._reader.join(timeout=2.0)  # what it said before it exited is read to the end
        if self.import_failed is not None:
            raise TemplateImportFailed(import_refusal(self.import_failed, sys.executable))
        if self.proc is None and self.info is None:  # the owner was told why; the log says it
            raise TemplateImportFailed(self._guest_said("ended before its imports were done"))
        self._ensure_alive(waiting_for)
        assert self.info is not None
        if self.info.problems():
            raise TemplateUnfit("; ".join(self.info.problems()))
        return self.info

    @property
    def env(self) -> dict[str, str]:
        """The template's own environment (every forked worker starts from it)."""
        return dict(self._env)

    def spawn(self, command: WorkerCommand, cwd: Path | None, log_path: Path) -> ForkedChild:
        """Fork a worker running `command` (its module must be the CPU launcher)."""
        if command.module != ZYGOTE_RUNS:
            raise ValueError(
                f"the template runs only `python -m {ZYGOTE_RUNS}`, not `{command.module}`"
            )
        info = self.wait_ready(Deadline(TEMPLATE_IMPORT_DEADLINE_S))
        env = command.environment()
        frozen = info.frozen_for(self._env, env)
        if frozen:
            raise TemplateUnfit(
                "this worker's environment differs from the worker template's in variables "
                f"the template read at import, which a fork would leave frozen: {', '.join(frozen)}"
                f" (template: {[self._env.get(n) for n in frozen]}, worker: "
                f"{[env.get(n) for n in frozen]}); start it fresh (spawn='fresh' / --spawn "
                "fresh) or give the template that value"
            )
        assert self._conn is not None
        request_id = next(self._ids)
        request = {
            "op": "spawn",
            "id": request_id,
            "module": command.module,
            "dynamo_argv": list(command.dynamo_argv),
            "env": env,
            "cwd": str(cwd or self._cwd),
            "log": str(log_path),
        }
        with self._reply_ready:
            self._replies[request_id] = None
        with self._lock:
            self._conn.sendall((json.dumps(request) + "\n").encode())
        deadline = Deadline(FORK_REPLY_DEADLINE_S)
        with self._reply_ready:
            while self._replies[request_id] is None:
                self._ensure_alive("a fork (the worker template)")
                if deadline.expired:
                    raise self._timeout("a fork (the worker template)", deadline.seconds)
                self._reply_ready.wait(deadline.slice(0.25))
            child = self._replies.pop(request_id)
        assert child is not None
        return child

    def _alive(self) -> bool:
        if self.proc is not None:
            return self.proc.alive()
        return not self._gone.is_set()

    def _ensure_alive(self, waiting_for: str) -> None:
        if self.proc is not None:
            self.proc.ensure_alive(waiting_for)
        elif self._gone.is_set():
            raise TemplateGone(
                self._guest_said(f"ended while this session waited for {waiting_for}")
            )

    def _timeout(self, waiting_for: str, seconds: float) -> Exception:
        if self.proc is not None:
            return WaitTimeout(self.proc, waiting_for, seconds)
        return TimeoutError(self._guest_said(f"not ready after {seconds:.0f} s: {waiting_for}"))

    def _guest_said(self, what: str) -> str:
        """A guest's failure: the template's pid and log, and the log's last line (a failed
        import's one-line refusal is its last)."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        lines = text.strip().splitlines()
        last = lines[-1] if lines else "(its log is empty)"
        return f"the run's worker template (pid {self.pid}, log {self.log_path}) {what}: {last}"

    def _read(self) -> None:
        assert self._conn is not None
        with contextlib.suppress(OSError), self._conn.makefile("rb") as lines:
            for line in lines:
                self._dispatch(json.loads(line))
        self._gone.set()
        if self.proc is None:
            self._ready.set()  # wakes a guest's wait_ready, which says why (an owner's waits
            # for its process to end, and says so with its log)
        self._template_gone()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "ready" in message:
            self.info = TemplateInfo(
                pid=message["ready"],
                import_s=message["import_s"],
                threads=tuple(message["threads"]),
                os_threads=message["os_threads"],
                env_reads=frozenset(message["env_reads"]),
                reread=frozenset(message["reread"]),
                modules=message["modules"],
            )
            self._ready.set()
        elif "import_failed" in message:
            self.import_failed = message["import_failed"]
            self._ready.set()  # wakes wait_ready, which raises
        elif "exited" in message:
            child = self._children.pop(message["exited"], None)
            if child is not None:
                child.exited(message["code"])
        elif "id" in message:
            child = ForkedChild(message["pid"], [ZYGOTE_RUNS])
            self._children[child.pid] = child
            with self._reply_ready:
                self._replies[message["id"]] = child
                self._reply_ready.notify_all()

    def _template_gone(self) -> None:
        """The template exited: its children's exit codes are lost; report them as LOST once
        they are gone, so a waiter never hangs."""
        for child in list(self._children.values()):
            threading.Thread(target=_await_gone, args=(child,), daemon=True).start()

    def stop(self) -> None:
        """Hang up; the owner's template then ends (stopped as any process of the harness's),
        a guest's stays for its owner."""
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.shutdown(socket.SHUT_RDWR)
        if self.proc is not None:
            self.proc.stop(grace=5)
            if self.address is not None:
                self.address.unlink(missing_ok=True)
        if self._conn is not None:
            self._conn.close()
        if self._reader is not None:
            self._reader.join(timeout=5)


def _await_gone(child: ForkedChild) -> None:
    """Wait for a process that is not our child to end (pidfd), then mark it LOST."""
    try:
        fd = os.pidfd_open(child.pid)
    except ProcessLookupError:
        child.exited(LOST)
        return
    try:
        import select

        select.select([fd], [], [])
    finally:
        os.close(fd)
    child.exited(LOST)


def spawn_mode(requested: str, tier: TierPolicy, own_dynamo: bool = True) -> str:
    """auto: the template where the tier has one (CPU), fresh processes elsewhere (GPU,
    always) and for another release's environment (the template is built from the harness's
    own)."""
    if requested == "auto":
        return ZYGOTE if tier.template and own_dynamo else FRESH
    if requested not in SPAWN_MODES:
        raise ValueError(f"--spawn must be auto, fresh or zygote, not {requested!r}")
    if requested == ZYGOTE and not tier.template:
        raise ValueError(
            f"--spawn zygote exists on the CPU tier only (the {tier.name} tier is fresh)"
        )
    if requested == ZYGOTE and not own_dynamo:
        raise ValueError("--spawn zygote needs the harness's own Dynamo (not --dynamo-env)")
    return requested
