"""Each worker's `/metrics` (its system port's Prometheus text), read once per worker and
reduced to what the self-description check needs: which series carry a `model` label, and
with which value.

A worker names its model in the series it exports: `model` (and, on some, `model_name`) is
the served model name (upstream #8035 was a worker whose series named another model). The
reads run in parallel, one thread per worker, so a verdict pays for the slowest read only.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from discovery_harness.serving.media_server import LOOPBACK

MODEL_LABELS = ("model", "model_name")  # Dynamo's prometheus_names.labels.MODEL, MODEL_NAME
READ_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ModelLabel:
    """One value of a model label (`model` or `model_name`) and the series that carry it."""

    name: str  # the label: "model" or "model_name"
    value: str
    series: tuple[str, ...]  # sample names, sorted (e.g. dynamo_component_requests_total)


@dataclass(frozen=True)
class MetricsRead:
    """What one worker's `/metrics` said (or why it said nothing)."""

    url: str
    status: int | None = None  # None: no answer
    error: str = ""  # why there is no text (no answer, a parse error)
    labels: tuple[ModelLabel, ...] = ()  # every model label's values, with their series
    series: int = 0  # samples read in all

    @property
    def read(self) -> bool:
        return self.status == 200 and not self.error


def metrics_url(port: int) -> str:
    return f"http://{LOOPBACK}:{port}/metrics"


def model_labels(text: str) -> tuple[tuple[ModelLabel, ...], int]:
    """Every value of a model label in a Prometheus text exposition, with the sample names
    that carry it, and the number of samples read."""
    by_value: dict[tuple[str, str], set[str]] = {}
    samples = 0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples += 1
            for name in MODEL_LABELS:
                value = sample.labels.get(name)
                if value is not None:
                    by_value.setdefault((name, value), set()).add(sample.name)
    labels = tuple(
        ModelLabel(name, value, tuple(sorted(series)))
        for (name, value), series in sorted(by_value.items())
    )
    return labels, samples


def read_one(client: httpx.Client, port: int) -> MetricsRead:
    url = metrics_url(port)
    try:
        response = client.get(url)
    except httpx.HTTPError as error:
        return MetricsRead(url, error=f"no answer ({type(error).__name__}: {error})")
    if response.status_code != 200:
        return MetricsRead(url, response.status_code, f"HTTP {response.status_code}")
    try:
        labels, samples = model_labels(response.text)
    except ValueError as error:  # the parser's complaint about a malformed line
        return MetricsRead(url, 200, f"unparseable exposition ({error})")
    return MetricsRead(url, 200, "", labels, samples)


def read_all(ports: Sequence[int]) -> list[MetricsRead]:
    """Every port's `/metrics`, read in parallel, in the order given."""
    if not ports:
        return []
    # Plain HTTP on loopback: no certificates to load (verify=False), no proxy (trust_env).
    with (
        httpx.Client(timeout=READ_TIMEOUT_S, verify=False, trust_env=False) as client,
        ThreadPoolExecutor(max_workers=len(ports), thread_name_prefix="metrics") as pool,
    ):
        return list(pool.map(lambda port: read_one(client, port), ports))
