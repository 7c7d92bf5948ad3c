"""Contract violations: each a kind the self-tests inject, with a message a person can act on."""

from __future__ import annotations

from dataclasses import dataclass

WORKER_EXITED = "worker-exited"
NEVER_REGISTERED = "never-registered"
CARD_WITHOUT_INSTANCE = "card-without-instance"
WRONG_CARD = "wrong-card"
INTERNAL_ADVERTISED = "internal-advertised"
NEVER_LISTED = "public-model-never-listed"
LISTED_EARLY = "listed-before-topology-complete"
INCOMPATIBLE_WORKERS = "incompatible-workers"
STATUS_503 = "503-after-ready"
BAD_RESPONSE = "error-for-listed-model"
BAD_CONTENT = "bad-response-content"
# A malformed request answered other than a 4xx with an error body (a 5xx, a 200), or the
# worker no longer serving its kind's ordinary request after it (serving/bad_input.py).
BAD_INPUT_ANSWER = "bad-input-answer"
NON_LOOPBACK = "non-loopback-address"
REGISTERED_UNEXPECTEDLY = "registered-but-must-not"
INTERFERENCE = "interference"
NEEDS_UNMET = "needs-not-met"  # audit: a card needs a worker type no peer has
LORA_REFUSED = "lora-refused"  # a worker answered a LoRA load/unload with an error
# A LoRA's cycle left a trace: listed too late or still listed after unload, or discovery not
# as it was before the load (a card, an instance, a field changed).
LORA_LEFT_BEHIND = "lora-left-behind"
# The readiness contract (a worker's /health, Kubernetes' readiness probe):
NEVER_READY = "never-ready"  # registered (or not), never said ready in time
READY_BEFORE_CARD = "ready-before-card"  # said ready while its card was not in etcd
UNREADY_AFTER_READY = "unready-after-ready"  # fell back to not ready, nothing done to it
READY_BUT_MUST_NOT = "ready-but-must-not"  # a worker that serves nothing said ready
# The health canary (DYN_HEALTH_CHECK_ENABLED): the worker's handler failed its own
# health_check_payload (upstream #14680), or no health check reached it within the wait.
CANARY_REJECTED = "canary-rejected"
CANARY_NEVER_RAN = "canary-never-ran"
# The frontend's GET /v1/models/{m}/ready says other than etcd's cards and instances imply.
FRONTEND_READINESS_DISAGREES = "frontend-readiness-disagrees"
# The frontend's GET /health instances differ from etcd's past the agreement deadline.
FRONTEND_HEALTH_STALE = "frontend-health-stale"
# A worker's self-description: its /metrics series' `model` label names another model
# (upstream #8035), its card's runtime_config says other than its flags set, or a LoRA card
# lacks the runtime data of its base card (upstream #14862: adapters lost their parsers).
METRICS_MODEL_LABEL = "metrics-model-label"
RUNTIME_CONFIG_MISMATCH = "runtime-config-mismatch"
LORA_WITHOUT_RUNTIME_DATA = "lora-card-without-runtime-data"


def lora_shape(missing: list[str] | tuple[str, ...]) -> str:
    """The label of a LoRA card that lacks only these runtime-data keys (its violation's
    `shape`): what a release's known violation names, so any other gap still fails."""
    return "runtime_data without " + ", ".join(sorted(missing))


# --dynamo-src: the checkout's Python and the runtime under it disagree (a keyword the runtime
# rejects at registration): not a violation of the code's contract, the pair cannot run.
MISFIT = "checkout-runtime-misfit"
# The harness's own CPU stand-in failed where Dynamo called it (model/stand_in_blame.py): a
# harness error, never a Dynamo violation.
STAND_IN_FAILED = "stand-in-failed"
START_FAILED = (NEVER_REGISTERED, WORKER_EXITED, MISFIT)  # no card to judge the rest by


@dataclass(frozen=True)
class Violation:
    kind: str
    role: str | None  # the worker it concerns; None for topology-wide findings
    message: str
    # What backs it up at length (a worker's log lines and the log's path): printed after
    # every violation's message, so the first screen of a failure is the violations.
    evidence: str = ""
    # When it happened (wall times of each occurrence, e.g. each 503's answer): what a known
    # violation's window is checked against; () where no single moment applies.
    at: tuple[float, ...] = ()
    shape: str | None = None  # a bad answer's request shape ("image[n-2]"), a LoRA card's gap

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"

    # A list of violations in a failing assertion reads as the violations, not as fields.
    __repr__ = __str__


class ContractFailure(AssertionError):
    """Raised with every violation found, so one run shows all that is wrong: first each
    violation, then the evidence (log excerpts)."""

    def __init__(self, topology: str, violations: list[Violation]) -> None:
        self.topology = topology
        self.violations = list(violations)
        listing = "\n\n".join(str(v) for v in self.violations)
        evidence = "\n\n".join(v.evidence for v in self.violations if v.evidence)
        text = (
            f"topology '{topology}' broke its discovery contract "
            f"({len(self.violations)} violation(s)):\n\n{listing}"
        )
        if evidence:
            text += f"\n\n--- evidence ---\n{evidence}"
        super().__init__(text)

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def find(self, kind: str, role: str | None = None) -> list[Violation]:
        return [v for v in self.violations if v.kind == kind and (role is None or v.role == role)]


class ContractFailures(ContractFailure):
    """Several deployments' failures at once (a test's teardown reports every one)."""

    def __init__(self, failures: list[ContractFailure]) -> None:
        AssertionError.__init__(self, "\n\n".join(str(f) for f in failures))
        self.topology = ", ".join(dict.fromkeys(f.topology for f in failures))
        self.violations = [v for f in failures for v in f.violations]
        self.failures = list(failures)

    @classmethod
    def of(cls, failures: list[ContractFailure]) -> ContractFailure:
        return failures[0] if len(failures) == 1 else cls(failures)
