"""Reading Prometheus exposition text back in tests: the samples and their labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from lagbot.service.metrics import Metrics

Samples = dict[tuple[tuple[str, str], ...], float]


def samples(metrics: Metrics, name: str) -> Samples:
    """{sorted label pairs: value} of every sample called `name` in the rendered text."""
    found: Samples = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def labels(**pairs: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(pairs.items()))
