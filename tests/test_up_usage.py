"""`python -m discovery_harness up` and `audit`: bad input is one line and exit 4 (every command's
usage
error), before anything starts."""

from __future__ import annotations

import pytest

from discovery_harness.cli.app import main

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["no-such-topology"], "unknown topology 'no-such-topology'"),
        (["aggregated", "--inject-fault", "mm-worker=skip-registration"], "has no role"),
        (["aggregated", "--inject-fault", "worker=no-such-fault"], "unknown fault"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(args, says, capsys):
    assert main(["up", *args]) == 4
    out = capsys.readouterr().err.strip()
    assert len(out.splitlines()) == 1 and says in out, out


def test_a_negative_audit_grace_is_refused_before_anything_is_read(capsys):
    assert main(["audit", "--etcd", "http://127.0.0.1:1", "--grace", "-1"]) == 4
    err = capsys.readouterr().err.strip()
    assert err == "audit: --grace -1: seconds, 0 or more", err
