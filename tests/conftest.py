"""The harness's tests of itself: marked `harness_tests` (an -m selection takes them only when
it names them, plugin.parametrize), and `unit` unless they start a process (`process`: a CLI,
an inner pytest in a subprocess, a tool; `e2e`: real etcd, NATS, frontend and workers). A
`unit` test that starts one fails, naming the marker it needs."""

import contextlib
import subprocess
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from tests.inner_pytest import ROOT

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before the plugin's selection reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in Path(item.path).resolve().parents:
            continue  # a scenario (this hook sees the whole session's items)
        item.add_marker(pytest.mark.harness_tests)
        if item.get_closest_marker("e2e") is None and item.get_closest_marker("process") is None:
            item.add_marker(pytest.mark.unit)


@contextlib.contextmanager
def _refusing_processes(item: pytest.Item) -> Iterator[None]:
    """For a `unit` item, subprocess.Popen refuses, naming the marker the test needs instead:
    the marker means what it says (no processes). Held over the item's whole setup, so a
    module or session fixture that a unit test is the first to ask for is caught too."""
    if item.get_closest_marker("unit") is None:
        yield
        return

    def refuse(self: subprocess.Popen[bytes], args: object, *rest: object, **kw: object) -> None:
        raise AssertionError(
            f"a `unit` test started a process ({args!r:.120}), in a fixture or its body: mark "
            "it `process` (or `e2e`)"
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", refuse)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    with _refusing_processes(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    with _refusing_processes(item):
        return (yield)


@pytest.fixture
def inner_pytest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """A pytest session run in this process from the project root, as `run_pytest` runs one
    in a subprocess: the same arguments and environment (its reports in a folder of its own,
    no xdist worker variables); gives what the process would have (exit status, stdout,
    stderr)."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(ROOT)  # pytester starts in a folder of its own
        for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HARNESS_REPORT_DIR", str(tmp_path / "inner-reports"))
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
        return subprocess.CompletedProcess(
            list(args), int(result.ret), "\n".join(result.outlines), "\n".join(result.errlines)
        )

    return run
