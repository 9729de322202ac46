"""`lagbot check` as a newcomer runs it, as its own process, on Apache Kafka: the table fits 80, 100, 120 and 200
columns with a 184-character group name and a live member's consumer id (LAG always there, exact); a `-g` that
matches no whole name suggests a prefix; an unreachable broker says why (refused, or a name that does not resolve);
`--json` says at the top that the cluster could not be read; `-n 1` on an idle group says what the table says.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from lagbot.devkit.apache_kafka import ApacheKafka
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


def lagbot(*argv: str, columns: int | None = None) -> Done:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    if columns is not None:
        environ["COLUMNS"] = str(columns)
    done = subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        check=False,
    )
    return Done(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class Lagging:
    group: str
    topic: str
    lags: list[int]


@pytest.fixture
def lagging(kafka: Kafka, names: Names) -> Iterator[Lagging]:
    """A group with a 184-character name and one live member, 3 partitions behind by 30, 20 and 10 messages."""
    topic = names("topic")
    group = (names("group") + ".settlement.reconciliation." + "x" * 184)[:184]
    kafka.create_topic(topic, 3)
    for number, count in enumerate((50, 40, 30)):
        kafka.produce(topic, number, count)
    member = kafka.consumer(group, **{"client.id": "orders-worker-with-a-long-client-id"})
    member.subscribe([topic])
    kafka.wait_assigned(member)
    member.commit(offsets=_offsets(topic, [20, 20, 20]), asynchronous=False)
    yield Lagging(group, topic, [30, 20, 10])
    member.close()


def _offsets(topic: str, committed: list[int]) -> list[object]:
    from confluent_kafka import TopicPartition

    return [TopicPartition(topic, n, offset) for n, offset in enumerate(committed)]


def tables(out: str) -> list[list[str]]:
    found: list[list[str]] = []
    current: list[str] | None = None
    for line in out.splitlines():
        if re.match(r"^(GROUP|TOPIC)\s", line):
            current = [line]
            found.append(current)
        elif current is not None and line and not line.startswith("  "):
            current.append(line)
        else:
            current = None
    return found


@pytest.mark.parametrize("columns", [80, 100, 120, 200])
def test_the_table_fits_the_terminal_with_long_names_and_shows_the_exact_lag(
    broker: ApacheKafka, lagging: Lagging, columns: int
) -> None:
    done = lagbot("check", "-b", broker.bootstrap, "-g", re.escape(lagging.group), "-n", "1", columns=columns)
    assert done.code in (0, 1, 2), done.err
    [table] = tables(done.out)
    assert all(len(line) <= columns for line in table), "\n".join(table)
    header = table[0].split()
    lag_at = header.index("LAG")
    assert sorted(int(row.split()[lag_at]) for row in table[1:]) == sorted(lagging.lags)
    assert "CONSUMER-ID" not in header  # a live member's id (~50 characters) never fits beside a 184-character group
    assert done.out.splitlines()[-1].startswith("1 group: ")


def test_without_a_terminal_the_whole_table_is_printed(broker: ApacheKafka, lagging: Lagging) -> None:
    done = lagbot("check", "-b", broker.bootstrap, "-g", re.escape(lagging.group), "-n", "1")
    [table] = tables(done.out)
    assert table[0].split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID",
        "STATUS", "LAG-SECONDS",
    ]  # fmt: skip
    assert all(row.split()[0] == lagging.group for row in table[1:])
    assert all("orders-worker-with-a-long-client-id" in row for row in table[1:])


def test_a_group_pattern_matching_no_whole_name_suggests_a_prefix(broker: ApacheKafka, lagging: Lagging) -> None:
    prefix = lagging.group[:12]
    done = lagbot("check", "-b", broker.bootstrap, "-g", prefix, "-n", "1")
    assert (done.code, done.err) == (0, "")
    assert done.out == (
        f"no consumer group is named '{prefix}' (-g matches whole names: try -g '{prefix}.*' for names that start so)\n"
    )
    found = lagbot("check", "-b", broker.bootstrap, "-g", f"{re.escape(prefix)}.*", "-n", "1")
    assert lagging.group in found.out


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_broker_says_the_port_refused(broker: ApacheKafka) -> None:
    port = closed_port()
    done = lagbot("check", "-b", f"127.0.0.1:{port}", "--timeout", "1", "-n", "1")
    assert done.code == 3, done.err
    [first] = done.out.splitlines()[:1]
    assert first.startswith("cluster default: UNREACHABLE (")
    assert first.endswith(
        f"; 127.0.0.1:{port} refused the connection: no broker listens on that port (is it running? the right port?))"
    )


def test_an_unreachable_broker_says_the_name_does_not_resolve() -> None:
    done = lagbot("check", "-b", "no-such-broker.invalid:9092", "--timeout", "1", "-n", "1")
    assert done.code == 3, done.err
    assert "the name no-such-broker.invalid does not resolve (" in done.out
    assert "check the bootstrap servers' host names" in done.out


def test_json_says_at_the_top_that_the_cluster_could_not_be_read() -> None:
    port = closed_port()
    done = lagbot("check", "-b", f"127.0.0.1:{port}", "--timeout", "1", "-n", "1", "--json")
    assert done.code == 3
    document = json.loads(done.out)
    assert list(document)[:6] == ["version", "taken_at", "severity", "readable", "unreachable", "exit_code"]
    assert (document["readable"], document["unreachable"], document["exit_code"]) == (False, ["default"], 3)
    assert "refused the connection" in document["clusters"][0]["error"]


def test_json_of_a_readable_cluster(broker: ApacheKafka, lagging: Lagging) -> None:
    done = lagbot("check", "-b", broker.bootstrap, "-g", re.escape(lagging.group), "-n", "1", "--json")
    document = json.loads(done.out)
    assert (document["readable"], document["unreachable"], document["exit_code"]) == (True, [], done.code)


def test_one_snapshot_of_an_idle_group_says_what_its_table_says(
    kafka: Kafka, names: Names, broker: ApacheKafka
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 10)
    kafka.commit(group, {(topic, 0): 4})  # no member: Empty
    done = lagbot("check", "-b", broker.bootstrap, "-g", re.escape(group), "-n", "1", columns=200)
    headline = next(line for line in done.out.splitlines() if line.startswith(f"{group} ("))
    assert " · no consumers · state Empty · lag 6 · " in headline, headline
    assert "consuming" not in headline and "- behind" not in headline
    [table] = tables(done.out)
    cell = table[1].split()[-1]  # LAG-SECONDS: '-' (one snapshot, nothing in the time index), '>N' or 'N.N'
    said = {"-": "time behind unknown"}.get(cell) or (
        f"more than {cell[1:]} s behind" if cell.startswith(">") else f"{round(float(cell))} s behind"
    )
    assert f" · {said} · " in headline, (cell, headline)
    severity = headline.split(" · severity ")[1].split(" ")[0].lower()
    assert done.out.splitlines()[-1] == f"1 group: 1 {'idle' if severity == 'ok' else severity}"
