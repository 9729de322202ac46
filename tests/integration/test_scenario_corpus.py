"""The scenario corpus (tests/integration/corpus.py) graded on Apache Kafka: each row right on status, primary
cause and the remediation it offers, with `lagbot check --samples 4 --every 3` sampling."""

from __future__ import annotations

import pytest

from lagbot.devkit.apache_kafka import ApacheKafka
from tests.conftest import Names
from tests.integration.corpus import SCENARIOS, grade, table

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_is_diagnosed_right(broker: ApacheKafka, names: Names, name: str) -> None:
    graded = grade(broker.bootstrap, name, names("topic"), names("group"))
    assert graded.right, table([graded])
