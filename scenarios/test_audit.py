"""`python -m discovery_harness audit` against real deployments, started by the code the tests use:
conformant ones pass, each injected fault is named with the scenario self-test's kind and
role, the file backend is audited through its store, an unreachable store is exit 2.

By default: the #4486 shape and the unreachable store. Nightly: `up` + audit of aggregated
(and Ctrl-C leaves nothing), every topology and the fault matrix.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from discovery_harness.cli.app import main
from discovery_harness.common.deadline import Deadline
from discovery_harness.deployment import FILE, Deployment, Planes, Session
from discovery_harness.discovery.faults import rewrite_card_needs
from discovery_harness.model.topology import Topology
from discovery_harness.model.violations import (
    BAD_RESPONSE,
    FRONTEND_READINESS_DISAGREES,
    INTERNAL_ADVERTISED,
    NEEDS_UNMET,
    NEVER_REGISTERED,
    WRONG_CARD,
    ContractFailure,
)
from discovery_harness.plugin import topology_param
from discovery_harness.plugin.session import FAULTS_KEY
from discovery_harness.processes import ports
from discovery_harness.runtime.spawn import FRESH
from discovery_harness_scenarios.catalogue import AGGREGATED, CATALOGUE, MM_ENCODE_PD

pytestmark = [pytest.mark.e2e, pytest.mark.sglang, pytest.mark.gpu_0]
ROOT = Path(__file__).resolve().parent.parent
UP_DEADLINE_S = 180.0


@pytest.fixture
def deployed(
    harness_session: Session, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Deployment]]:
    """Start a topology as the deploy fixture does, readiness decided but not raised (an
    injected fault is what the audit must find), stopped after the test. Without faults of
    its own, the run's --inject-fault ones for its roles, as `deploy` takes them."""
    injected = request.config.stash[FAULTS_KEY]
    stack = contextlib.ExitStack()  # each deployment a `with`: stopped after the test

    def start(topology, faults=None, **options) -> Deployment:
        if faults is None:
            roles = {w.role for w in topology.workers}
            faults = {role: fault for role, fault in injected.items() if role in roles}
        # Strict where a fault is injected (the audit must find it); a clean deployment keeps
        # its release's known violations aside, as `deploy` does.
        strict = bool(faults)
        deployment = stack.enter_context(
            Deployment(topology, harness_session, faults=faults, strict=strict, **options)
        )
        deployment.start()
        with contextlib.suppress(ContractFailure):
            deployment.await_ready()
        return deployment

    with stack:
        yield start


def audit(capsys, *args: str) -> tuple[int, str]:
    code = main(["audit", *args])
    return code, capsys.readouterr().out


def etcd_audit(capsys, deployment: Deployment, tmp_path: Path, *extra: str) -> tuple[int, str]:
    return audit(
        capsys,
        "--etcd",
        deployment.session.endpoints.etcd,
        "--frontend",
        deployment.client.base_url,
        "--namespace",
        deployment.plan.namespace,
        "--report-dir",
        str(tmp_path / "reports"),
        *extra,
    )


@pytest.mark.nightly
@pytest.mark.timeout(300)
def test_up_serves_audit_says_conformant_and_ctrl_c_leaves_nothing(tmp_path):
    env_file = tmp_path / "up.env"
    up = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "discovery_harness",
            "up",
            "aggregated",
            "--env-file",
            str(env_file),
            "--workdir",
            str(tmp_path / "up"),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output = _read_until(up, "Ctrl-C (or SIGTERM) stops everything", Deadline(UP_DEADLINE_S))
        values = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
        assert values["HARNESS_VERDICT"] == "conformant", output
        worker_health = output.split("--worker-health ", 1)[1].split()[0]
        assert f"/health {worker_health}/health" in output  # each worker's URL, announced
        tree = psutil.Process(up.pid).children(recursive=True)
        assert len(tree) >= 4, output  # etcd, NATS, frontend, worker (and the template)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "discovery_harness",
                "audit",
                "--etcd",
                values["ETCD_ENDPOINTS"],
                "--frontend",
                values["FRONTEND_URL"],
                "--probe",
                "--worker-health",
                worker_health,
                "--report-dir",
                str(tmp_path / "reports"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "recognised as aggregated: conformant" in done.stdout
        assert "frontend /ready: 200 ready; etcd: ready: aggregated 1 live" in done.stdout
        assert "frontend /health: 5 instance(s) of" in done.stdout
        assert f"worker /health {worker_health}/health: 200 " in done.stdout
        up.send_signal(signal.SIGINT)
        rest, _ = up.communicate(timeout=120)
        assert up.returncode == 0, output + rest
        assert "every process it started has exited" in rest
        assert not [p.pid for p in tree if _alive(p)]
    finally:
        _stop_up(up)


@pytest.mark.selftest  # a fault injected: under -m, only when it names selftest
@pytest.mark.nightly
@pytest.mark.multimodal
@pytest.mark.timeout(240)
def test_audit_names_the_mm_worker_that_never_registered(deployed, capsys, tmp_path):
    deployment = deployed(MM_ENCODE_PD, faults={"mm-worker": "skip-registration"})
    encoder = f"http://127.0.0.1:{deployment.worker('mm-encoder').ports.system}"
    code, out = etcd_audit(capsys, deployment, tmp_path, "--grace", "2", "--worker-health", encoder)
    assert code == 1, out
    assert f"worker /health {encoder}/health: 200 " in out and '"ready"' in out  # the encoder
    assert "[never-registered] worker 'mm-worker'" in out
    instance = deployment.records(deployment.observer.state(), deployment.worker("mm-worker"))
    assert instance.generate is not None and f"{instance.generate.instance_id:x}" in out
    assert "component 'backend'" in out
    assert (tmp_path / "reports" / "report.json").exists()
    # The frontend agrees with etcd that the topology cannot serve (the mm-worker's card is
    # missing), and lists the instances etcd holds.
    assert "frontend /ready: " in out and "; etcd: not ready" in out, out
    assert "frontend /health: " in out and "DISAGREE" not in out, out


@pytest.mark.selftest
@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_audit_names_a_worker_whose_health_never_says_ready(deployed, capsys, tmp_path):
    deployment = deployed(AGGREGATED, faults={"worker": "never-ready"})
    url = f"http://127.0.0.1:{deployment.worker('worker').ports.system}"
    code, out = etcd_audit(capsys, deployment, tmp_path, "--grace", "1", "--worker-health", url)
    assert code == 1, out
    assert f"[never-ready] the worker at {url} did not say ready on /health" in out
    assert "last answer: 503" in out and "notready" in out


@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_audit_reports_the_frontends_readiness_and_a_disagreement(
    deployed, capsys, tmp_path, discovery_observer
):
    """On a deployment started as the tests start one: /ready and /health agree with etcd;
    with the worker's card rewritten in place (the frontend keeps the old one), the audit
    shows the frontend saying ready while etcd's card needs a prefill worker."""
    deployment = deployed(AGGREGATED)
    deployment.verify()
    code, out = etcd_audit(capsys, deployment, tmp_path)
    assert code == 0, out
    assert (
        "frontend /ready: 200 ready; etcd: ready: aggregated 1 live (needs nothing): agree" in out
    )
    assert f"frontend /health: 5 instance(s) of {deployment.plan.namespace}; etcd 5: agree" in out
    key, _ = rewrite_card_needs(discovery_observer, deployment.card("worker"), [["prefill"]])
    code, out = etcd_audit(capsys, deployment, tmp_path)
    assert code == 1, out
    assert f"[{FRONTEND_READINESS_DISAGREES}] at the audit: the frontend's readiness" in out
    assert "says ready while etcd lacks prefill" in out and key in out
    assert "frontend /ready: 200 ready; etcd: not ready" in out and "DISAGREE" in out


@pytest.mark.pre_merge
def test_an_unreachable_store_or_frontend_is_exit_4_with_one_line(capsys, infra_endpoints):
    closed = ports.allocate_one()
    try:
        code = main(["audit", "--etcd", f"http://127.0.0.1:{closed}"])
        err = capsys.readouterr().err
        assert code == 4 and len(err.strip().splitlines()) == 1, err
        code = main(
            [
                "audit",
                "--etcd",
                infra_endpoints.etcd,
                "--frontend",
                f"http://127.0.0.1:{closed}",
                "--namespace",
                "h-none",
                "--grace",  # the session's other deployments' keys are not this test's subject
                "0",
            ]
        )
        err = capsys.readouterr().err
        assert code == 4 and len(err.strip().splitlines()) == 1 and "frontend" in err, err
    finally:
        ports.release([closed])


CPU_TOPOLOGIES = [t for t in CATALOGUE if t.cpu_skip is None]


@pytest.mark.nightly
@pytest.mark.parametrize(
    "topology", [topology_param(t, pytest.mark.timeout(300)) for t in CPU_TOPOLOGIES]
)
def test_every_topology_audits_conformant(topology, deployed, capsys, tmp_path):
    deployment = deployed(topology)
    deployment.verify()  # a readiness failure is raised with the harness's diagnosis
    code, out = etcd_audit(capsys, deployment, tmp_path, "--probe")
    assert code == 0, out


def _cards(topology: Topology) -> tuple[object, ...]:
    return tuple((w.component, w.card) for w in topology.registering_workers)


def twin_roles(topology: Topology, role: str) -> list[str]:
    """The role and every worker of the topology that discovery cannot tell from it: the
    same component and card (two decode workers of one P/D set)."""
    shape = (topology.worker(role).component, topology.worker(role).card)
    return [w.role for w in topology.registering_workers if (w.component, w.card) == shape]


def roles_seen_by_discovery(topology: Topology, role: str) -> set[str]:
    """The names the audit may give the role, unhinted. Topologies whose cards are identical
    (mm-native-p-d and disaggregated differ only in flags) cannot be told apart from
    discovery: the audit names the first one's roles; nor can twin roles (either name)."""
    twin = next(t for t in CATALOGUE if _cards(t) == _cards(topology))
    positions = [
        topology.registering_workers.index(topology.worker(r)) for r in twin_roles(topology, role)
    ]
    return {twin.registering_workers[p].role for p in positions}


def _named(out: str, roles: set[str]) -> bool:
    return any(f"[{NEVER_REGISTERED}] worker '{name}'" in out for name in roles)


SKIP_CASES = [
    pytest.param(t, w.role, id=f"{t.name}-{w.role}", marks=topology_param(t).marks)
    for t in CPU_TOPOLOGIES
    for w in t.workers
    if w.registers and (len(t.registering_workers) > 1 or t is AGGREGATED)
]


@pytest.mark.selftest  # a fault injected: under -m, only when it names selftest
@pytest.mark.nightly
@pytest.mark.timeout(240)
@pytest.mark.parametrize(("topology", "role"), SKIP_CASES)
def test_each_skipped_registration_is_named_as_the_self_test_names_it(
    topology, role, deployed, capsys, tmp_path
):
    deployment = deployed(topology, faults={role: "skip-registration"})
    found = deployment.verdict().violations
    assert {v.role for v in found if v.kind == NEVER_REGISTERED} == {role}, ContractFailure(
        topology.name, list(found)
    )
    # The deployment waited out its card grace already: the audit need not wait its own.
    code, out = etcd_audit(capsys, deployment, tmp_path, "--grace", "0")
    assert code == 1 and _named(out, roles_seen_by_discovery(topology, role)), out
    assert "needs-not-met" not in out  # the peer's unmet need is this same finding
    # Told what was deployed, the audit names the self-test's own role (or its twin's).
    hinted = ("--grace", "0", "--topology", topology.name)
    code, out = etcd_audit(capsys, deployment, tmp_path, *hinted)
    assert code == 1 and _named(out, set(twin_roles(topology, role))), out


@pytest.mark.selftest  # a fault injected: under -m, only when it names selftest
@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_told_the_topology_a_wrong_worker_type_is_a_wrong_card(deployed, capsys, tmp_path):
    """Unhinted, a card saying decode is believed (a decode worker missing its prefill);
    told the deployment is aggregated, the audit reads it as the self-test does."""
    deployment = deployed(AGGREGATED, faults={"worker": "wrong-worker-type"})
    code, out = etcd_audit(capsys, deployment, tmp_path)
    assert code == 1 and f"[{NEEDS_UNMET}] worker 'decode'" in out, out
    code, out = etcd_audit(capsys, deployment, tmp_path, "--topology", "aggregated")
    assert code == 1 and f"[{WRONG_CARD}] worker 'worker'" in out, out
    assert "worker_type 'decode', expected 'aggregated'" in out


@pytest.mark.selftest  # a fault injected: under -m, only when it names selftest
@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_probe_names_the_error_for_a_listed_model(deployed, capsys, tmp_path):
    deployment = deployed(AGGREGATED, faults={"worker": "handler-error"})
    code, out = etcd_audit(capsys, deployment, tmp_path)
    assert code == 0, out  # no traffic without --probe: discovery and listing are right
    code, out = etcd_audit(capsys, deployment, tmp_path, "--probe")
    assert code == 1 and f"[{BAD_RESPONSE}]" in out and "-> 500" in out, out


@pytest.mark.selftest  # a fault injected: under -m, only when it names selftest
@pytest.mark.nightly  # the suite's own evidence is proven pre_merge (test_selftests.py)
@pytest.mark.timeout(240)
def test_a_failed_probe_shows_its_cause_from_the_logs_given(deployed, capsys, tmp_path):
    """A handler that fails only on real requests: with the frontend's and the worker's logs
    the audit shows the frontend's error line for its probe, the worker it routed to (role and
    instance id: an audit knows no pid) and its traceback; without them it says what to grep."""
    deployment = deployed(AGGREGATED, faults={"worker": "request-error"})
    frontend = deployment.processes.frontend
    assert frontend is not None
    code, out = etcd_audit(capsys, deployment, tmp_path, "--probe")
    assert code == 1 and "no log was given (--frontend-log PATH" in out, out
    assert "look for the request id(s) harness-" in out, out
    worker = deployment.worker("worker")
    logs = ("--frontend-log", str(frontend.proc.log_path))
    logs += ("--worker-log", f"worker={worker.proc.log_path}")
    code, out = etcd_audit(capsys, deployment, tmp_path, "--probe", *logs)
    evidence = out.split("--- evidence ---", 1)[-1]
    assert code == 1 and f"[{BAD_RESPONSE}]" in out and "--- evidence ---" in out, out
    assert "ERROR" in evidence.split("served by")[0], evidence  # the frontend's own error line
    assert "served by worker 'worker' (instance " in evidence, evidence
    assert "RuntimeError: injected fault on a real request" in evidence, evidence


@pytest.mark.selftest  # a fault injected: under -m, only when it names selftest
@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_an_internal_card_made_public_is_named(deployed, capsys, tmp_path):
    deployment = deployed(MM_ENCODE_PD, faults={"mm-worker": "advertise-internal"})
    code, out = etcd_audit(capsys, deployment, tmp_path)
    assert code == 1 and f"[{INTERNAL_ADVERTISED}] worker 'mm-worker'" in out, out


@pytest.mark.selftest  # a fault injected: under -m, only when it names selftest
@pytest.mark.nightly
@pytest.mark.timeout(240)
def test_a_late_card_within_the_grace_is_conformant(deployed, capsys, tmp_path):
    deployment = deployed(AGGREGATED, faults={"worker": "delayed-registration"}, fault_delay_s=2)
    code, out = etcd_audit(capsys, deployment, tmp_path, "--grace", "30")
    assert code == 0, out


@pytest.mark.nightly
@pytest.mark.long  # the file backend: the transport matrix and the missing-card self-test
@pytest.mark.timeout(400)
def test_the_file_backend_is_audited_through_its_store(deployed, capsys, tmp_path):
    # Fresh processes: the worker template read DYN_DISCOVERY_BACKEND=etcd at import.
    healthy = deployed(AGGREGATED, planes=Planes(discovery=FILE), spawn=FRESH)
    store = str(healthy.plan.file_store)
    code, out = audit(capsys, "--file-store", store, "--report-dir", str(tmp_path / "r"))
    assert code == 0 and "recognised as aggregated: conformant" in out, out
    broken = deployed(
        MM_ENCODE_PD,
        faults={"mm-worker": "skip-registration"},
        planes=Planes(discovery=FILE),
        spawn=FRESH,
    )
    store = str(broken.plan.file_store)
    report = ("--report-dir", str(tmp_path / "r"))
    code, out = audit(capsys, "--file-store", store, "--grace", "0", *report)  # waited out
    assert code == 1 and "[never-registered] worker 'mm-worker'" in out, out


def _read_until(proc: subprocess.Popen, line: str, deadline: Deadline) -> str:
    """The process's output up to `line` (each read wakes on output, not on a timer)."""
    seen: list[str] = []
    assert proc.stdout is not None
    while not deadline.expired:
        text = proc.stdout.readline()
        if not text:
            raise AssertionError("harness up exited early:\n" + "".join(seen))
        seen.append(text)
        if line in text:
            return "".join(seen)
    raise AssertionError(f"no {line!r} within {deadline.seconds:.0f} s:\n" + "".join(seen))


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _stop_up(up: subprocess.Popen[str]) -> None:
    """After a failure too: `up` stops what it started on SIGTERM; whatever of its tree is
    still alive after that (its infra and workers run in sessions of their own, out of reach
    of its process group) is killed by pid."""
    if up.poll() is not None:
        return
    tree = psutil.Process(up.pid).children(recursive=True)
    up.send_signal(signal.SIGTERM)
    try:
        up.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(up.pid, signal.SIGKILL)
        up.wait()
    for process in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
