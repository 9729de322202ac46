"""Block Kit rendering of verdicts: exact content, and Slack's limits for any size (checked by the emulator)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from lagbot.core.model import Cause, GroupState, GroupVerdict, Member, PartitionVerdict, Severity, Status, Trend
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.slack_message import SlackMessage
from lagbot.slack.render import root_message, table_fallback, table_rows, thread_reply

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator().start() as running:
        yield running


def partition(i: int, lag: int | None, *, topic: str = "orders", owner: Member | None = None) -> PartitionVerdict:
    committed = None if lag is None else 1_000
    return PartitionVerdict(
        topic=topic,
        partition=i,
        committed=committed,
        log_end=1_000 + (lag or 0),
        log_start=0,
        lag=lag,
        lag_seconds=None if lag is None else float(lag) / 100,
        lag_seconds_lower_bound=False,
        status=Status.STALL if lag and lag > 500 else Status.OK,
        reason="",
        produce_rate=None,
        consume_rate=None,
        owner=owner,
    )


def verdict(partitions: list[PartitionVerdict], causes: int = 2, group: str = "orders-consumer") -> GroupVerdict:
    known = [p.lag for p in partitions if p.lag is not None]
    return GroupVerdict(
        cluster="prod",
        group=group,
        state=GroupState.STABLE,
        status=max((p.status for p in partitions), default=Status.OK),
        severity=Severity.CRITICAL,
        severity_reason="critical: lag 4.2 M > 500,000 for 0 s",
        partitions=tuple(partitions),
        total_lag=sum(known) if known else None,
        max_lag_seconds=42.0,
        produce_rate=12_000.0,
        consume_rate=800.0,
        eta_seconds=None,
        trend=Trend.GROWING,
        causes=tuple(
            Cause("stuck_consumer" if i % 2 else f"kind_{i}", "because " + "x" * 5_000, 0.9 - i / 100, rank=i + 1)
            for i in range(causes)
        ),
    )


def post(slack: SlackEmulator, rendered: SlackMessage, **kwargs: object) -> str:
    response = WebClient(token=slack.token, base_url=slack.api_url).chat_postMessage(
        channel="C1", text=rendered.text, blocks=rendered.json_blocks(), **kwargs
    )
    return str(response["ts"])


def test_root_message_content() -> None:
    worker = Member("m-2", "worker-2", "/10.0.0.2")
    root = root_message(verdict([partition(0, 10), partition(1, 4_200_000, owner=worker)]))
    text, blocks = root.text, root.json_blocks()
    assert text == "CRITICAL `orders-consumer` on `prod`: stalled, lag 4.2 M"
    assert blocks[0]["text"]["text"] == (
        ":red_circle: *CRITICAL* `orders-consumer` on prod: *stalled*, lag *4.2 M* (42 s behind) "
        "↗ growing, ETA never at the current rates"
    )
    # Slack's control characters are escaped on the wire ("&gt;" shows as ">").
    assert blocks[1]["elements"][0]["text"] == (
        "state Stable · critical: lag 4.2 M &gt; 500,000 for 0 s · worst: orders/1 lag 4.2 M (STALL)"
    )


def test_table_is_lagging_first_with_owner_and_dashes() -> None:
    worker = Member("m-2", "worker-2", "/10.0.0.2")
    rows = table_rows(verdict([partition(0, 10), partition(1, 900, owner=worker), partition(2, None)]))
    assert rows == [
        ["orders/1", "1000", "1900", "900", "9.0", "worker-2@/10.0.0.2 (member m-2)", "STALL"],
        ["orders/0", "1000", "1010", "10", "0.1", "-", "OK"],
        ["orders/2", "-", "1000", "-", "-", "-", "OK"],
    ]
    fallback = table_fallback(verdict([partition(0, 10), partition(1, 900, owner=worker)]))
    assert fallback.splitlines()[1].split() == [
        "partition",
        "committed",
        "log-end",
        "lag",
        "lag",
        "s",
        "owner",
        "status",
    ]
    assert fallback.splitlines()[2].split() == [
        "orders/1",
        "1000",
        "1900",
        "900",
        "9.0",
        "worker-2@/10.0.0.2",
        "(member",
        "m-2)",
        "STALL",
    ]


def test_beyond_100_rows_the_top_98_and_a_summary_row() -> None:
    parts = [partition(i, 10_000 - i) for i in range(250)]
    rows = table_rows(verdict(parts))
    assert len(rows) == 99  # plus the header row: 100, Slack's maximum
    assert rows[0][0] == "orders/0" and rows[97][0] == "orders/97"
    rest = sum(10_000 - i for i in range(98, 250))
    assert rows[98] == ["… 152 more", "-", "-", str(rest), "-", "-", "-"]  # Slack refuses a raw_text of no text


@pytest.mark.parametrize("n", [0, 1, 98, 99, 100, 101, 1_000, 5_000])
@pytest.mark.parametrize("causes", [0, 3, 14, 60])
def test_every_size_is_accepted_by_slack(slack: SlackEmulator, n: int, causes: int) -> None:
    group = "g<&>" + "x" * 300
    parts = [partition(i, i * 7 if i % 5 else None, topic="t" * 200) for i in range(n)]
    v = verdict(parts, causes=causes, group=group)
    root = post(slack, root_message(v))
    post(slack, thread_reply(v), thread_ts=root)
    assert slack.calls[-1].status == 200 and slack.calls[-1].response["ok"] is True  # type: ignore[index]


@pytest.mark.parametrize("n", [0, 1, 100, 5_000])
@pytest.mark.parametrize("causes", [0, 60])
def test_incident_messages_of_every_change_are_accepted_by_slack(slack: SlackEmulator, n: int, causes: int) -> None:
    from dataclasses import replace

    from lagbot.core.config import IncidentConfig
    from lagbot.service.incidents import Change, step
    from lagbot.service.remediation_state import RemediationState
    from lagbot.slack.render import change_reply, incident_root

    group = "g<&>" + "x" * 300
    v = verdict([partition(i, i * 7, topic="t" * 200) for i in range(n)], causes=causes, group=group)
    config = IncidentConfig()
    opened = step(None, v, channel="C1", silenced=False, config=config, now=1_000.0).incident
    assert opened is not None
    running = RemediationState(action="scale", state="running", detail="x" * 5_000, id="p1")
    incident = replace(opened, remediation=running)
    root = post(slack, incident_root(incident, v, config, 2_000.0))
    post(slack, incident_root(replace(incident, below_since=1_500.0), v, config, 2_000.0))
    post(slack, incident_root(replace(incident, resolved_at=1_900.0), v, config, 2_000.0))
    for change in Change:
        post(slack, change_reply(change, "warn", incident, v, 2_000.0), thread_ts=root)
    assert [c.status for c in slack.calls if c.response.get("ok") is not True] == []  # type: ignore[union-attr]
