"""Contracts per Dynamo release: era selection, era command lines, the history's table.

The fast tests here run in the default command; the ones that need release environments are
nightly and take whichever are built (`bash ci/setup.sh --dynamo VERSION`; CI builds 0.7.1 and
one rotating release, its nightly all): each release's stand-ins against that release's
installed code, and the conformance history itself, which must find Dynamo #4486 on 0.7.1 by
running it (nothing tells the harness which release is buggy).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from discovery_harness.cli.app import main as harness_main
from discovery_harness.discovery.observer import DiscoveryState
from discovery_harness.history import html, releases, start_paths, table
from discovery_harness.history.record import ItemFindings
from discovery_harness.history.run import DEFAULT_ENVS, ReleaseRun, read_junit, run_release
from discovery_harness.judge import checks
from discovery_harness.judge import deployment as judged
from discovery_harness.model.catalogue import load
from discovery_harness.model.contract import ExpectedCard
from discovery_harness.model.records import Instance, ModelCard
from discovery_harness.model.topology import Scenario, UnsupportedRelease
from discovery_harness.model.violations import REGISTERED_UNEXPECTEDLY
from discovery_harness.runtime import dynamo_env, tier
from discovery_harness.runtime.launch import worker_command
from tests.fakes import NS, FakeWorker, card_entry, instance_entry
from tests.inner_pytest import run_drift
from tests.sites import worker_site

CATALOGUE = load()
OWN = dynamo_env.own().version
OLDER_RELEASES = tuple(r for r in releases.known() if r != OWN)
# The topologies every release must give a verdict for (issue 18's "done when").
CORE = ("aggregated", "disaggregated", "embedding", "mm-encode-pd", "mm-encode-p-d")


def test_each_release_gets_its_era_or_a_reason():
    mm = CATALOGUE.topology("mm-encode-pd")
    assert mm.for_release(OWN) is mm
    old = mm.for_release("0.7.1")
    assert [w.role for w in old.workers] == ["mm-processor", "mm-encoder", "mm-worker"]
    assert old.era is not None and old.era.request_plane == "nats"
    assert mm.for_release("0.8.1").era.request_plane == "tcp"  # type: ignore[union-attr]
    with pytest.raises(UnsupportedRelease, match=r"mode added in 1\.6 \(--rerank-worker\)"):
        CATALOGUE.topology("rerank").for_release("1.5.1")
    with pytest.raises(UnsupportedRelease, match=r"mode added in 1\.0"):
        CATALOGUE.topology("image-diffusion").for_release("0.9.1")
    with pytest.raises(UnsupportedRelease, match=r"no contract declared for ai-dynamo 0\.6\.0"):
        mm.for_release("0.6.0")


def test_a_release_keeps_the_known_violations_declared_for_it():
    """An era's topology keeps the declarations naming its release (the listing of releases
    before 1.1) and drops the others (1.6.1's E/P/D windows, its encoder's /health window, its
    multimodal canaries)."""
    epd = CATALOGUE.topology("mm-encode-p-d")
    on_0_7 = {(k.kind, k.shape) for k in epd.for_release("0.7.1").known_violations}
    image_to_text = ("bad-input-answer", "chat[image-to-text-only]")  # every release < 1.6
    assert on_0_7 == {("bad-response-content", "listing[default]"), image_to_text}
    assert all("0.7.1" in k.dynamo_versions for k in epd.for_release("0.7.1").known_violations)
    on_1_1 = {(k.kind, k.shape) for k in epd.for_release("1.1.1").known_violations}
    assert on_1_1 == {image_to_text, ("canary-rejected", None)}  # finding 15, measured on 1.1
    assert sum(k.applies_to(OWN) for k in epd.for_release(OWN).known_violations) == 4


def test_readiness_is_judged_on_the_releases_it_was_measured_on():
    """The operator's settings and the readiness verdict on 1.5.1 (measured, its faults
    declared), not on releases outside the declared range."""
    aggregated = CATALOGUE.topology("aggregated")
    assert aggregated.for_release("1.5.1").health_judged
    assert not aggregated.for_release("0.7.1").health_judged
    assert aggregated.for_release(OWN).health_judged
    # 1.0-1.2: the workers' /health and canaries, not the frontend's /ready (no such route).
    on_1_2 = aggregated.for_release("1.2.1")
    assert on_1_2.health_judged and not on_1_2.frontend_readiness_judged
    assert aggregated.for_release("1.3.1").frontend_readiness_judged
    assert aggregated.for_release(OWN).frontend_readiness_judged
    embedding = CATALOGUE.topology("embedding").for_release("1.5.1")
    kinds = {k.kind for k in embedding.known_violations}
    assert kinds >= {"canary-rejected", "unready-after-ready"}


@pytest.mark.parametrize("release", OLDER_RELEASES)
def test_every_release_has_a_contract_for_the_core_topologies(release: str):
    for name in CORE:
        deployed = CATALOGUE.topology(name).for_release(release)
        assert deployed.era is not None and deployed.workers, (name, release)


@pytest.mark.parametrize("release", OLDER_RELEASES)
def test_every_topology_has_a_contract_or_the_release_that_added_its_mode(release: str):
    """Issue 18: no release is left at "no contract declared" for any topology."""
    for topology in CATALOGUE.topologies:
        try:
            deployed = topology.for_release(release)
        except UnsupportedRelease as reason:
            assert "mode added in" in str(reason), (topology.name, release, str(reason))
            continue
        assert deployed.era is not None and deployed.workers, (topology.name, release)


def test_the_modes_added_after_0_7_as_their_releases_deploy_them():
    """Each older era of these is the release's own launch line (see scenarios/eras.py)."""
    native = CATALOGUE.topology("mm-native")
    assert "--enable-multimodal" not in native.for_release("1.2.1").worker("mm-agg").flags
    with pytest.raises(UnsupportedRelease, match=r"mode added in 0\.9 .*PR #5450"):
        native.for_release("0.8.1")
    with pytest.raises(UnsupportedRelease, match=r"mode added in 1\.3 .*PR #10643"):
        CATALOGUE.topology("mm-native-p-d").for_release("1.2.1")
    with pytest.raises(UnsupportedRelease, match=r"mode added in 1\.1 .*PR #4769"):
        CATALOGUE.topology("lora-p-d").for_release("1.0.2")
    follower = CATALOGUE.topology("multinode").for_release("0.7.1").worker("follower")
    assert follower.card is None and follower.start_paths == ("init/non_leader",)
    dllm = CATALOGUE.topology("llm-diffusion").for_release("0.9.1")
    assert dllm.era is not None and not dllm.era.namespace_flag
    assert dllm.worker("diffusion-llm").start_paths == ("init_diffusion",)


def test_the_multimodal_design_of_each_range():
    """0.7-0.8: internal cards (#4512); 0.9-1.0: internal endpoints behind the processor
    (#5500); 1.1-1.2: the encoder is public; 1.3+: the current contract."""
    mm = CATALOGUE.topology("mm-encode-p-d")

    def shape(release: str) -> list[tuple[str, bool, bool]]:
        return [
            (w.role, w.card is not None and w.card.public, w.internal_endpoint)
            for w in mm.for_release(release).workers
        ]

    assert shape("0.8.1")[1:] == [
        (r, False, False) for r in ("mm-encoder", "mm-prefill", "mm-decode")
    ]
    assert shape("0.9.1") == [("mm-processor", True, False)] + [
        (r, False, True) for r in ("mm-encoder", "mm-prefill", "mm-decode")
    ]
    assert shape("1.1.1") == [
        ("mm-encoder", True, False),
        ("mm-prefill", False, True),
        ("mm-decode", False, True),
    ]
    assert mm.for_release("1.3.1").workers == mm.workers


def test_an_era_without_a_cpu_stand_in_is_gpu_only_there():
    image = CATALOGUE.topology("image-diffusion")
    no_stand_in = dataclasses.replace(image.eras[0], cpu_skip="no stand-in for its engine")
    gpu_only = dataclasses.replace(image, eras=(no_stand_in, *image.eras[1:]))
    assert gpu_only.for_release("1.3.1").cpu_skip == "no stand-in for its engine"
    assert gpu_only.for_release(OWN).cpu_skip is None


def test_every_mode_of_every_release_from_1_0_runs_on_the_cpu_tier():
    """The stand-ins cover every topology a 1.x release has (image and video diffusion
    included: discovery_harness_workers.cpu_diffusion for sglang 0.5.9 on)."""
    for release in ("1.0.2", "1.1.1", "1.2.1", "1.3.1", "1.4.2", "1.5.1", OWN):
        for topology in CATALOGUE.topologies:
            try:
                era = topology.for_release(release)
            except UnsupportedRelease:
                continue
            assert era.cpu_skip is None, (topology.name, release, era.cpu_skip)


def test_cards_before_1_3_carry_no_topology_fields():
    disagg = CATALOGUE.topology("disaggregated")
    prefill = disagg.for_release("1.2.1").worker("prefill").card
    assert prefill is not None and (prefill.worker_type, prefill.needs) == ("", ())
    assert prefill.model_type == disagg.worker("prefill").card.model_type  # type: ignore[union-attr]
    assert disagg.for_release("1.3.1").workers == disagg.workers


def _records(with_card: bool) -> checks.WorkerRecords:
    key = "ns/encoder/generate/a"
    instance = Instance(f"v1/instances/{key}", "ns", "encoder", "generate", 10, "127.0.0.1:20001/a")
    card = ModelCard(
        f"v1/mdc/{key}", "ns", "encoder", "generate", 10, "m", "Chat", "Tokens", "", (), {}
    )
    return checks.WorkerRecords([instance], [instance], [card] if with_card else [])


def _view(internal_endpoint: bool) -> FakeWorker:
    return FakeWorker("mm-encoder", "encoder", None, internal_endpoint=internal_endpoint)


def test_an_internal_endpoint_serves_but_a_card_of_it_is_caught():
    assert checks.must_not_register(_records(with_card=False), _view(internal_endpoint=True)) == []
    found = checks.must_not_register(_records(with_card=True), _view(internal_endpoint=True))
    assert [v.kind for v in found] == [REGISTERED_UNEXPECTEDLY]
    assert "mm-encoder" in found[0].message and "v1/mdc/ns/encoder/generate/a" in found[0].message
    # A worker that must stay out altogether is caught for its instance alone.
    found = checks.must_not_register(_records(with_card=False), _view(internal_endpoint=False))
    assert "serves or registered: v1/instances/ns/encoder/generate/a" in found[0].message


def _nats_leader_and_follower() -> list[FakeWorker]:
    card = ExpectedCard(
        model_type="Chat | Completions", model_input="Tokens", worker_type="", needs=()
    )
    leader = FakeWorker("leader", "backend", card, pid=1, tcp_port=None)
    return [leader, FakeWorker("follower", "backend", None, pid=2, tcp_port=None)]


@pytest.mark.parametrize("follower_registers", [False, True])
def test_a_follower_beside_its_leader_on_nats_is_judged_by_count(follower_registers: bool):
    """0.7's NATS plane gives no port to tell a leader's keys from its follower's: the
    leader's card-bearing instance is its, anything more in the component is the follower's."""
    entries = [instance_entry("backend", 10, 0), card_entry("backend", 10, worker_type="")]
    if follower_registers:
        entries += [instance_entry("backend", 11, 0), card_entry("backend", 11, worker_type="")]
    state = DiscoveryState(dict(entries))
    workers = _nats_leader_and_follower()
    violations = judged.card_violations(state, NS, "model-x", workers)
    caught = [v for v in violations if v.kind == REGISTERED_UNEXPECTEDLY]
    assert [v.role for v in caught] == (["follower"] if follower_registers else [])
    leader = judged.worker_records(state, NS, workers[0], workers)
    assert [c.instance_id for c in leader.cards] == [10]


def test_an_era_command_line_takes_the_namespace_from_the_environment(tmp_path: Path):
    topology = CATALOGUE.topology("mm-encode-pd").for_release("0.7.1")
    site = worker_site(tmp_path, model_name="Qwen/Qwen2.5-VL-7B-Instruct")
    command = worker_command(
        tier.CPU,
        Scenario.packed(topology),
        topology.worker("mm-encoder"),
        model_path="/models/vl",
        site=site,
        timeout_s=30,
    )
    assert "--namespace" not in command.dynamo_argv
    assert command.env["DYN_NAMESPACE"] == "h-ns"
    assert "--multimodal-encode-worker" in command.dynamo_argv


def test_a_missing_release_environment_is_one_clear_error(tmp_path: Path):
    with pytest.raises(dynamo_env.DynamoEnvError, match=r"ci/setup\.sh --dynamo VERSION"):
        dynamo_env.resolve(tmp_path / "nowhere")


def _junit(path: Path) -> None:
    """A JUnit file as a release's run writes it: one failed and one skipped topology."""
    suites = ElementTree.Element("testsuites")
    suite = ElementTree.SubElement(suites, "testsuite", name="pytest", time="42.0")
    failed = ElementTree.SubElement(
        suite, "testcase", name="test_registers_and_serves[mm-encode-pd]"
    )
    properties = ElementTree.SubElement(failed, "properties")
    found = [
        never_registered := {"kind": "never-registered", "role": "mm-encoder"},
        {"kind": "chat-image", "status": 200, "ok": True},
    ]
    never_registered["message"] = "worker mm-encoder never registered"
    for name, value in zip(("history.violation", "history.request"), found, strict=True):
        ElementTree.SubElement(properties, "property", name=name, value=json.dumps(value))
    ElementTree.SubElement(failed, "failure", message="ContractFailure: broke its contract")
    skipped = ElementTree.SubElement(suite, "testcase", name="test_registers_and_serves[rerank]")
    reason = "rerank on ai-dynamo 0.7.1: no rerank worker before 0.9"
    ElementTree.SubElement(skipped, "skipped", message=reason)
    ElementTree.ElementTree(suites).write(path)


def test_the_history_table_shows_each_check_and_violation(tmp_path: Path):
    junit = tmp_path / "junit.xml"
    _junit(junit)
    findings, seconds = read_junit(junit)
    assert seconds == 42.0
    run = ReleaseRun("0.7.1", "env", findings)
    text = table.markdown([run], ["mm-encode-pd", "rerank"])
    assert "| 0.7.1 | mm-encode-pd | FAILED | never-registered (mm-encoder) | chat-image 200 |" in (
        text
    )
    assert "| 0.7.1 | rerank | skipped | rerank on ai-dynamo 0.7.1: no rerank worker" in text
    assert "[never-registered]: worker mm-encoder never registered" in text


def _run(release: str, findings: dict[str, ItemFindings]) -> ReleaseRun:
    return ReleaseRun(release, f"ai-dynamo {release}", findings, seconds=1.0)


def test_the_start_path_table_names_the_first_release_that_registered_correctly():
    broken = ItemFindings(
        "failed", violations=[{"kind": "never-registered", "role": "mm-worker", "message": "x"}]
    )
    runs = [
        _run("0.7.1", {"mm-encode-pd": broken, "aggregated": ItemFindings("passed")}),
        _run("0.8.1", {"mm-encode-pd": ItemFindings("passed")}),
    ]
    rows = {r.start_path: r for r in start_paths.rows(runs, CATALOGUE)}
    worker = rows["init_multimodal_worker"]
    assert worker.cells == {"0.7.1": "BROKEN (mm-encode-pd: never-registered)", "0.8.1": "ok"}
    assert worker.first_correct == "0.8.1"
    assert rows["init"].cells == {"0.7.1": "ok", "0.8.1": ""}  # 0.8.1 did not run it
    assert rows["init_multimodal_encode_worker"].first_correct == "0.7.1"
    page = html.page(runs, ["mm-encode-pd"], list(rows.values()))
    assert '<td class="bad">BROKEN (mm-encode-pd: never-registered)</td>' in page
    assert "<summary>0.7.1 / mm-encode-pd [never-registered] mm-worker</summary>" in page


def test_history_refuses_a_release_it_has_no_requirements_for(tmp_path: Path, capsys):
    assert harness_main(["history", "--releases", "9.9.9", "--out", str(tmp_path)]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no requirements for ai-dynamo 9.9.9" in err[0]
    assert "0.7.1" in err[0] and OWN in err[0] and "setup.sh" not in err[0]
    assert list(tmp_path.iterdir()) == []


def _saved(out: Path, *runs: ReleaseRun) -> str:
    (out / "history.json").write_text(table.as_json(list(runs)))
    (out / "history.md").write_text("the table as it was\n")
    return (out / "history.json").read_text()


def test_history_keeps_the_table_when_a_release_cannot_run(tmp_path: Path):
    saved = _saved(tmp_path, _run("0.7.1", {"aggregated": ItemFindings("passed")}))
    argv = ["history", "--releases", "0.8.1", "--topology", "aggregated", "--no-build"]
    argv += ["--envs-dir", str(tmp_path / "no-envs"), "--out", str(tmp_path)]
    assert harness_main(argv) == 1
    assert (tmp_path / "history.md").read_text() == "the table as it was\n"
    assert (tmp_path / "history.json").read_text() == saved


def test_history_resumes_a_release_already_in_the_table(tmp_path: Path, capsys):
    saved = _saved(tmp_path, _run("0.7.1", {"aggregated": ItemFindings("passed")}))
    argv = ["history", "--releases", "0.7.1", "--topology", "aggregated", "--no-build"]
    argv += ["--envs-dir", str(tmp_path / "no-envs"), "--out", str(tmp_path)]
    assert harness_main(argv) == 0  # nothing ran: no environment was needed
    assert "0.7.1: kept from" in capsys.readouterr().out
    assert (tmp_path / "history.json").read_text() == saved


def _release_env(release: str) -> Path | None:
    env = DEFAULT_ENVS / f"dynamo-{release}"
    return env if (env / "bin" / "python").exists() else None


def _built(*wanted: str) -> None:
    missing = [r for r in wanted if _release_env(r) is None]
    if missing:
        pytest.skip(f"not built here: bash ci/setup.sh --dynamo {' '.join(missing)}")


@pytest.mark.process
@pytest.mark.nightly
@pytest.mark.timeout(600)
@pytest.mark.parametrize("release", OLDER_RELEASES)
def test_each_release_matches_its_stand_ins(release: str):
    _built(release)
    python = DEFAULT_ENVS / f"dynamo-{release}" / "bin" / "python"
    result = run_drift(python)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "0 difference(s)" in result.stdout


def _statuses(item) -> set[int]:
    return {r["status"] for r in item.requests}


def _kinds(item, role: str | None = None) -> set[str]:
    return {v["kind"] for v in item.violations if role is None or v["role"] == role}


@pytest.mark.process
@pytest.mark.nightly
@pytest.mark.timeout(900)
def test_the_history_finds_4486_on_the_release_that_shipped_it(tmp_path: Path):
    _built("0.7.1")
    with_0_8 = _release_env("0.8.1") is not None  # asserted where built (CI rotates it)
    topologies = ["aggregated", "mm-encode-pd", "mm-encode-p-d"]
    runs = {
        release: run_release(release, topologies, DEFAULT_ENVS, tmp_path, [])
        for release in ("0.7.1", *(["0.8.1"] if with_0_8 else []), OWN)
    }
    print(table.markdown(list(runs.values()), topologies))
    for run in runs.values():
        assert run.error is None, run.error
        assert run.findings["aggregated"].outcome == "passed", run.findings["aggregated"]

    # 0.7.1: the image chat answers 200 while encoder and PD worker never registered a card.
    pd = runs["0.7.1"].findings["mm-encode-pd"]
    assert pd.outcome == "failed" and 200 in _statuses(pd)
    assert "never-registered" in _kinds(pd, "mm-encoder") and "never-registered" in _kinds(
        pd, "mm-worker"
    )
    if with_0_8:  # the PD worker dies at start; the E/P/D prefill card is public: chat 500
        assert "worker-exited" in _kinds(runs["0.8.1"].findings["mm-encode-pd"], "mm-worker")
        epd = runs["0.8.1"].findings["mm-encode-p-d"]
        assert "internal-advertised" in _kinds(epd, "mm-prefill") and 500 in _statuses(epd)
    # 1.6.1: conformant, apart from the declared E/P/D known violation.
    for name in ("mm-encode-pd", "mm-encode-p-d"):
        assert runs[OWN].findings[name].outcome == "passed"
