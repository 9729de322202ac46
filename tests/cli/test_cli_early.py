"""`lagbot check --bootstrap` reads the cluster while its settings load (lagbot.cli.early): that read is taken only
when the validated settings name the very cluster it was made for, and it is the snapshot a read now would take."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lagbot.cli import early
from lagbot.cli.early import FLAG_CLUSTER, EarlyRead, FlagCluster, fits, flag_cluster
from lagbot.cli.main import main
from lagbot.cli.settings import load_for_cli
from lagbot.core.config import ClusterConfig, GroupFilter
from lagbot.engine import check, timeindex
from lagbot.engine.collector import collect, make_admin
from tests.conftest import Kafka, Names


@pytest.fixture(autouse=True)
def no_lagbot_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAGBOT_CLUSTERS", raising=False)


def test_only_a_cluster_from_the_flags_alone_is_read_early(tmp_path: Path) -> None:
    assert flag_cluster(None, "k:9092", None) == FlagCluster("k:9092", (".*",))
    assert flag_cluster(None, "k:9092", "orders-.*") == FlagCluster("k:9092", ("orders-.*",))
    assert flag_cluster(tmp_path / "lagbot.yaml", "k:9092", None) is None  # a file may give it properties, a timeout
    assert flag_cluster(None, None, None) is None
    assert flag_cluster(None, "", None) is None
    assert flag_cluster(None, "k:9092", "orders-(") is None  # the settings name what is wrong with it


@pytest.mark.parametrize("group", [None, "orders-.*"])
def test_the_settings_name_the_cluster_read_early(monkeypatch: pytest.MonkeyPatch, group: str | None) -> None:
    """The defaults the early read takes are the settings' own, whatever the environment says of the rest, and even
    when the environment names clusters of its own (the flag replaces them)."""
    monkeypatch.setenv("LAGBOT_WINDOW__SAMPLES", "7")
    monkeypatch.setenv("LAGBOT_CLUSTERS", '[{"name": "envc", "bootstrap_servers": "e:1", "request_timeout": 3}]')
    read = flag_cluster(None, "k:9092", group)
    assert read is not None
    assert fits(read, load_for_cli(None, "k:9092", group).cluster(FLAG_CLUSTER))


@pytest.mark.parametrize(
    "changed",
    [
        {"name": "prod"},
        {"bootstrap_servers": "other:9092"},
        {"request_timeout": 3.0},
        {"kafka": {"client.id": "x"}},
        {"kafka_env": {"sasl.password": "LAGBOT_TEST_SECRET"}},
        {"groups": GroupFilter(include=["orders-.*"])},
        {"groups": GroupFilter(exclude=["^_"])},
    ],
    ids=lambda changed: next(iter(changed)),
)
def test_a_cluster_that_differs_in_anything_the_read_used_does_not_fit(
    monkeypatch: pytest.MonkeyPatch, changed: dict[str, object]
) -> None:
    monkeypatch.setenv("LAGBOT_TEST_SECRET", "s3cret")
    read = FlagCluster("k:9092", (".*",))
    same = ClusterConfig(name=FLAG_CLUSTER, bootstrap_servers="k:9092")
    assert fits(read, same)
    assert not fits(read, same.model_copy(update=changed))


@pytest.mark.integration
def test_the_early_read_is_the_snapshot_a_read_now_takes(kafka: Kafka, names: Names) -> None:
    topic, prefix = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    for partition in range(3):
        kafka.produce(topic, partition, 10 + partition)
    kafka.commit(f"{prefix}-a", {(topic, 0): 4, (topic, 1): 11, (topic, 2): 0})
    kafka.commit(f"{prefix}-b", {(topic, 2): 12})
    settings = load_for_cli(None, kafka.bootstrap, f"{prefix}-.*")
    cluster = settings.cluster(FLAG_CLUSTER)
    read = flag_cluster(None, kafka.bootstrap, f"{prefix}-.*")
    assert read is not None
    taken = EarlyRead(read).take(settings)
    assert taken is not None
    admin, early = taken.admin, taken.snapshot
    assert taken.index is not None  # the time index, at the default horizons the settings ask
    now = collect(make_admin(cluster, isolate_group_reads=False), cluster)
    assert early.error is None and sorted(early.groups) == [f"{prefix}-a", f"{prefix}-b"]
    assert early.groups[f"{prefix}-a"].committed == {(topic, 0): 4, (topic, 1): 11, (topic, 2): 0}
    assert early.groups[f"{prefix}-b"].committed == {(topic, 0): None, (topic, 1): None, (topic, 2): 12}
    assert early.log_end == now.log_end == {(topic, p): 10 + p for p in range(3)}
    assert {g: s.committed for g, s in early.groups.items()} == {g: s.committed for g, s in now.groups.items()}
    again = collect(admin, cluster)  # the client is handed to the check, which reads with it again (samples, index)
    assert again.error is None and again.log_end == early.log_end


@pytest.mark.integration
def test_lagbot_check_reads_the_cluster_once_and_early(
    kafka: Kafka, names: Names, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A check of one sample reads the cluster and its time index once, early, and reports what the broker holds; with
    a file naming the cluster no early read is made."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 9)
    kafka.produce(topic, 1, 5)
    kafka.commit(group, {(topic, 0): 2, (topic, 1): 5})
    reads: list[str] = []

    def counted(where: str, read: Any) -> Any:
        def collect_counted(*args: Any, **kwargs: Any) -> Any:
            reads.append(where)
            return read(*args, **kwargs)

        return collect_counted

    monkeypatch.setattr(early, "collect", counted("early", early.collect))
    monkeypatch.setattr(check, "collect", counted("checker", check.collect))
    monkeypatch.setattr(timeindex, "ask_offsets", counted("index", timeindex.ask_offsets))

    def run(*argv: str) -> dict[str, Any]:
        with pytest.raises(SystemExit):
            main(["check", "-n", "1", "--json", "-g", group, *argv])
        report: dict[str, Any] = json.loads(capsys.readouterr().out)
        return report

    def lags(report: dict[str, Any]) -> dict[tuple[str, int], tuple[int, int, int]]:
        [shown] = report["groups"]
        return {(p["topic"], p["partition"]): (p["committed"], p["log_end"], p["lag"]) for p in shown["partitions"]}

    assert lags(run("-b", kafka.bootstrap)) == {(topic, 0): (2, 9, 7), (topic, 1): (5, 5, 0)}
    assert reads == ["early", "index", "index", "index", "index"]  # the index's four horizons, asked once, early

    reads.clear()
    config = tmp_path / "lagbot.yaml"
    config.write_text(f"clusters:\n  - name: default\n    bootstrap_servers: {kafka.bootstrap}\n")
    assert lags(run("-c", str(config))) == {(topic, 0): (2, 9, 7), (topic, 1): (5, 5, 0)}
    assert reads == ["checker", "index", "index", "index", "index"]


def test_the_early_read_loads_no_settings_model() -> None:
    """What the early read imports (the collector, then the time index and what judging needs of it) loads neither
    pydantic nor the settings' models, or it would wait for them instead of running beside them."""
    program = (
        "import sys, lagbot.cli.early, lagbot.engine.timeindex; "
        "print(sorted(m for m in ('pydantic', 'lagbot.core.config') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "[]"
