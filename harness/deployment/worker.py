"""One worker process of a deployment, as the checks see it."""

from __future__ import annotations

from dataclasses import dataclass, field

from discovery_harness.model.contract import ExpectedCard
from discovery_harness.model.topology import WorkerSpec
from discovery_harness.processes.loopback import ProcessPorts
from discovery_harness.processes.managed import ManagedProcess
from discovery_harness.serving.model_facts import NO_FACTS, ModelFacts


@dataclass
class Worker:
    spec: WorkerSpec
    proc: ManagedProcess
    ports: ProcessPorts
    fault: str | None
    # Its keys carry the TCP port the harness gave it (TCP request plane, port pinned); else
    # they are told apart by component.
    pinned: bool = True
    # Its model as its command serves it (config, tokenizer, --context-length): what its
    # card's context length and its answers are judged against.
    model: ModelFacts = field(default=NO_FACTS)
    # The dynamo.sglang argv it was started with: what its card's runtime_config is judged by.
    argv: tuple[str, ...] = ()

    @property
    def context_length(self) -> int | None:
        return self.model.context_length

    @property
    def context_source(self) -> str:
        return self.model.context_source

    @property
    def role(self) -> str:
        return self.spec.role

    @property
    def component(self) -> str:
        return self.spec.component

    @property
    def expected(self) -> ExpectedCard | None:
        return self.spec.card

    @property
    def registrants(self) -> int:
        return self.spec.registrants if self.spec.card is not None else 0

    @property
    def registers(self) -> bool:
        return self.spec.registers

    @property
    def start_paths(self) -> tuple[str, ...]:
        return self.spec.start_paths

    @property
    def internal_endpoint(self) -> bool:
        return self.spec.internal_endpoint

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def tcp_port(self) -> int | None:
        return self.ports.tcp_rpc if self.pinned else None
