"""`python -m discovery_harness history`: every release, then one table (Markdown, JSON and HTML).

Each release runs in its own pytest process, `-j N` of them at once; a release already in the
table is kept unless `--rerun` asks for it again (so an interrupted history resumes); a
release's environment is built on demand. A release that could not run never replaces what
the table already says about it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from discovery_harness.common import child
from discovery_harness.common.exits import USAGE_ERROR
from discovery_harness.history import compare, html, parts, releases, start_paths, table
from discovery_harness.history.run import (
    DEFAULT_ENVS,
    ReleaseRun,
    environment_for,
    rerun_failed,
    run_release,
)
from discovery_harness.history.stability import DEFAULT_RUNS
from discovery_harness.model.catalogue import Catalogue
from discovery_harness.report.merge import write_merged_reports
from discovery_harness.runtime import dynamo_env

_say_lock = threading.Lock()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--releases",
        default="0.7.1,0.8.1,1.6.1",
        help="comma list of ai-dynamo versions with requirements in ci/requirements/releases/ "
        "(their environments are built on demand), or 'all'",
    )
    parser.add_argument("--topology", action="append", default=[], metavar="NAME")
    parser.add_argument("--envs-dir", default=None, help="where the release environments are")
    parser.add_argument("--out", default=None, help="table folder (default reports/history)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="releases run at once")
    parser.add_argument(
        "--rerun", action="store_true", help="run releases the table already holds again"
    )
    parser.add_argument(
        "--no-build", action="store_true", help="do not build missing release environments"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=DEFAULT_RUNS,
        help=f"most runs of a failed topology (default {DEFAULT_RUNS}; stops once two agree): "
        "each failed cell says deterministic or intermittent k/N; 1: no reruns",
    )
    parser.add_argument(
        "--dynamo-src",
        default=None,
        metavar="DIR",
        help="run a Dynamo checkout's components/src over each release's runtime and sglang "
        "(docs/your-checkout.md)",
    )
    parser.add_argument(
        "--against",
        default=None,
        metavar="HISTORY_JSON",
        help="another run's history.json: say which cells read differently (compare.md)",
    )
    parser.add_argument(
        "--drop-built",
        action="store_true",
        help="remove an environment this run built once its release ran (CI disks hold ~2.5 GB "
        "per release)",
    )


def say(text: str) -> None:
    with _say_lock:
        print(text, flush=True)


def _previous(out_dir: Path) -> dict[str, ReleaseRun]:
    saved = out_dir / "history.json"
    if not saved.exists():
        return {}
    return {run.release: run for run in table.from_json(saved.read_text()) if not run.error}


def _one_release(
    release: str, topologies: list[str], envs_dir: Path, out_dir: Path, args: argparse.Namespace
) -> ReleaseRun:
    started = time.monotonic()
    built = False
    try:
        environment_for(release, envs_dir)
    except dynamo_env.DynamoEnvError:
        if not args.no_build and envs_dir == DEFAULT_ENVS:
            built = True
            say(f"history: ai-dynamo {release}: building its environment ...")
            try:
                releases.build(
                    release,
                    lambda line: say(f"history: {release}: {line}"),
                    envs_dir / f"dynamo-{release}",
                )
            except dynamo_env.DynamoEnvError as failed:
                return ReleaseRun(release, "-", error=str(failed))
    say(f"history: ai-dynamo {release}: running {len(topologies)} topologies ...")
    extra = ["--dynamo-src", args.dynamo_src] if args.dynamo_src else []
    run = run_release(release, topologies, envs_dir, out_dir, extra)
    run = rerun_failed(run, envs_dir, out_dir, extra, args.runs)
    if built and args.drop_built:
        shutil.rmtree(envs_dir / f"dynamo-{release}", ignore_errors=True)
    outcome = run.error or f"{len(run.findings)} topologies"
    say(f"history: ai-dynamo {release}: {outcome} ({time.monotonic() - started:.0f} s)")
    return run


def write_tables(
    runs: list[ReleaseRun], topologies: list[str], catalogue: Catalogue, out_dir: Path
) -> str:
    """The table of every topology the runs hold (a `--topology` rerun merged into a table
    keeps the others' cells and shows them), in the catalogue's order."""
    held = {name for run in runs for name in run.findings} | set(topologies)
    topologies = [t.name for t in catalogue.topologies if t.name in held]
    paths = start_paths.rows(runs, catalogue)
    text = start_paths.markdown(paths, [r.release for r in runs])
    text += "\n" + parts.markdown(runs)
    text += "\n" + table.matrix(runs, topologies) + "\n" + table.markdown(runs, topologies)
    (out_dir / "history.md").write_text(text)
    (out_dir / "history.json").write_text(table.as_json(runs))
    (out_dir / "history.html").write_text(html.page(runs, topologies, paths))
    return text


def history_command(args: argparse.Namespace, catalogue: Catalogue) -> int:
    try:
        wanted = releases.parse(args.releases)
        topologies = [t.name for t in catalogue.select(args.topology or None)]
        if args.jobs < 1:
            raise ValueError(f"-j {args.jobs}: at least 1")
        if args.runs < 1:
            raise ValueError(f"--runs {args.runs}: at least 1")
        if args.against and not Path(args.against).is_file():
            raise ValueError(f"--against {args.against}: no such history.json")
    except (ValueError, KeyError) as bad:
        print(f"harness history: error: {bad.args[0] if bad.args else bad}", file=sys.stderr)
        return USAGE_ERROR
    envs_dir = Path(args.envs_dir) if args.envs_dir else DEFAULT_ENVS
    out_dir = Path(args.out) if args.out else Path("reports") / "history"
    out_dir.mkdir(parents=True, exist_ok=True)
    kept = _previous(out_dir)
    # Per release, the topologies the table does not hold yet (all of them with --rerun).
    todo = {
        r: [t for t in topologies if args.rerun or r not in kept or t not in kept[r].findings]
        for r in wanted
    }
    for release in [r for r in wanted if not todo[r]]:
        say(f"history: ai-dynamo {release}: kept from {out_dir / 'history.json'} (--rerun)")
    table_of = _TableKeeper(kept, topologies, catalogue, out_dir)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        pending = [
            pool.submit(_one_release, r, todo[r], envs_dir, out_dir, args)
            for r in wanted
            if todo[r]
        ]
        try:
            fresh = [table_of.add(done.result()) for done in as_completed(pending)]
        except KeyboardInterrupt:  # the worker threads' children never see it: pass it on
            for future in pending:
                future.cancel()
            child.interrupt_all()
            raise
    failed = [run for run in fresh if run.error]
    for run in failed:
        say(f"history: ai-dynamo {run.release}: NOT RUN, the table keeps what it had: {run.error}")
    if table_of.runs and not table_of.text and not failed:  # all kept: the same table, redrawn
        table_of.text = write_tables(table_of.runs, topologies, catalogue, out_dir)
    if table_of.text:
        # The run reports of every release in the table, merged (report.json / .md / .html).
        reports = [out_dir / run.release / "report.json" for run in table_of.runs]
        write_merged_reports(reports, out_dir)  # those that exist
        print(table_of.text)
        print(f"(written: {out_dir}/history.md, history.json, history.html)")
    if args.against and table_of.runs:
        _compare(table_of.runs, topologies, Path(args.against), out_dir)
    return 1 if failed or not table_of.runs else 0


def _compare(runs: list[ReleaseRun], topologies: list[str], against: Path, out_dir: Path) -> None:
    """Which cells of this table read differently from another run's (compare.md)."""
    before = table.from_json(against.read_text())
    compared, found = compare.differences(runs, before, topologies)
    text = compare.report(compared, found, str(against))
    text += "\nBoth runs together:\n\n" + compare.merged_matrix(runs, before, topologies)
    (out_dir / "compare.md").write_text(text)
    print(text)


class _TableKeeper:
    """The table, rewritten as each release finishes (an interrupted history keeps what it
    had run); a release that could not run leaves its row as it was."""

    def __init__(
        self,
        kept: dict[str, ReleaseRun],
        topologies: list[str],
        catalogue: Catalogue,
        out_dir: Path,
    ) -> None:
        self.merged = dict(kept)
        self.topologies, self.catalogue, self.out_dir = topologies, catalogue, out_dir
        self.text = ""

    @property
    def runs(self) -> list[ReleaseRun]:
        return [self.merged[r] for r in releases.ordered(self.merged)]

    def add(self, run: ReleaseRun) -> ReleaseRun:
        if run.error:
            return run
        before = self.merged.get(run.release)
        if before is not None:  # a rerun of some topologies keeps the release's others
            run.findings = {**before.findings, **run.findings}
            run.seconds += before.seconds
        self.merged[run.release] = run
        self.text = write_tables(self.runs, self.topologies, self.catalogue, self.out_dir)
        return run
