"""The digest, case by case: exact texts for hand-made verdicts, history, incidents and remediations.

Each numbered case says what it proves and why the expected text is right. `now` is Tuesday 12 March
2024, 09:00 UTC, so "24 h before" is Monday 09:00. Slack's limits are checked by the emulator's own
Block Kit validator (lagbot.devkit.block_kit.block_errors), written independently of the digest.
"""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any
from zoneinfo import ZoneInfo

import matplotlib.image
import numpy as np
import pytest

from lagbot.core.model import GroupVerdict, Severity, Status
from lagbot.devkit.block_kit import MAX_MESSAGE_BLOCKS, MAX_TEXT, block_errors
from lagbot.service.digest import IncidentSummary, RemediationSummary
from lagbot.service.history import LagPoint
from lagbot.slack.digest import build_digest, chart_series, lag_chart, point_near, worst
from tests.support.verdict_factory import unreadable, verdict

NOW = 1_710_234_000.0  # Tue 12 Mar 2024 09:00 UTC
HOUR = 3600.0
DAY = 24 * HOUR
DAY_AGO = NOW - DAY
UTC = ZoneInfo("UTC")


def texts(blocks: list[dict[str, Any]]) -> list[str]:
    """Each block's text, '---' for a divider."""
    found = []
    for block in blocks:
        if block["type"] == "divider":
            found.append("---")
        elif block["type"] == "context":
            found.append(" | ".join(e["text"] for e in block["elements"]))
        else:
            found.append(block["text"]["text"])
    return found


def digest(
    verdicts: list[GroupVerdict] | None = None,
    series: dict[tuple[str, str], list[LagPoint]] | None = None,
    incidents: list[IncidentSummary] | None = None,
    remediations: list[RemediationSummary] | None = None,
    **options: Any,
) -> tuple[str, list[dict[str, Any]]]:
    built = build_digest(
        verdicts=verdicts or [],
        series=series or {},
        incidents=incidents or [],
        remediations=remediations or [],
        now=options.pop("now", NOW),
        tz=options.pop("tz", UTC),
        **options,
    )
    return built.text, built.json_blocks()


def point(at: float, lag: int | None, seconds: float | None, status: Status = Status.OK) -> LagPoint:
    return LagPoint(at, lag, seconds, status, Severity.OK)


# Case 1: nothing routed, nothing happened. Every section still says so in words (an empty digest must
# not look like a broken one), and no chart is announced since no group is behind.
def test_case_1_an_empty_channel() -> None:
    fallback, blocks = digest()
    assert texts(blocks) == [
        "Kafka lag digest · last 24 h · Tue 12 Mar 09:00",
        "No consumer group is routed to this channel.",
        "No group is behind.",
        "---",
        "*Incidents*, last 24 h: 0 opened, 0 resolved, 0 still open\nNo incidents.",
        "---",
        "*Remediations*, last 24 h: 0 run\nNo remediations run.",
        "As of Tue 12 Mar 2024 09:00 (UTC)",
    ]
    assert blocks[0] == {"type": "header", "text": {"type": "plain_text", "text": texts(blocks)[0]}}
    assert fallback == "Kafka lag digest, last 24 h: 0 groups, 0 incident(s), 0 remediation(s)"


# Case 2: groups by status, worst first, statuses nobody has left out; the fallback names the troubled.
def test_case_2_groups_by_status() -> None:
    verdicts = [verdict(f"ok-{i}") for i in range(1_203)]
    verdicts += [
        verdict("stalled", total_lag=10, lag_seconds=4.0, status=Status.STALL),
        unreadable("a"),
        unreadable("b"),
    ]
    fallback, blocks = digest(verdicts)
    assert texts(blocks)[1] == "*1,206 groups*: 2 ERR · 1 STALL · 1,203 OK"
    assert fallback == "Kafka lag digest, last 24 h: 1,206 groups (2 ERR, 1 STALL), 0 incident(s), 0 remediation(s)"
    assert texts(digest([verdict("one")])[1])[1] == "*1 group*: 1 OK"


# Case 3: the worst five, by lag in seconds, then by messages (c before b: same seconds, more messages),
# unknown seconds after every known one (d is sixth, so cut); caught-up (e) and unreadable (f) groups
# are not "behind" at all. Comparisons (against Monday 09:00):
#   a: 780 s now, 60 s at Mon 09:10 (10 min off, within 30 min) -> growing;
#   c: 95 s now, 100 s at 08:31 (29 min off; the 09:31 point is 31 min off: outside) -> within 10%: steady;
#   b: only an ERR point near Monday 09:00 (no lag) and one 31 min off -> no data;
#   g: seconds unknown then, so messages are compared: 10 now, 100 then -> shrinking;
#   h: two points 60 s either side: the earlier wins the tie -> 10 s then, 20 s now -> growing.
def test_case_3_the_worst_five_against_24_h_before() -> None:
    verdicts = [
        verdict("a", total_lag=4_200_000, lag_seconds=780.0, status=Status.STOP),
        verdict("b", total_lag=12_000, lag_seconds=95.0, status=Status.WARN),
        verdict("c", total_lag=13_000, lag_seconds=95.0, status=Status.WARN),
        verdict("d", total_lag=50, lag_seconds=None),
        verdict("e", total_lag=0, lag_seconds=0.0),
        unreadable("f"),
        verdict("g", total_lag=10, lag_seconds=30.0),
        verdict("h", total_lag=5, lag_seconds=20.0),
    ]
    series = {
        ("prod", "a"): [point(DAY_AGO + 600, 100_000, 60.0), point(NOW, 4_200_000, 780.0)],
        ("prod", "b"): [point(DAY_AGO, None, None, Status.ERR), point(DAY_AGO + 31 * 60, 11_000, 90.0)],
        ("prod", "c"): [point(DAY_AGO - 29 * 60, 14_000, 100.0), point(DAY_AGO + 31 * 60, 1, 1.0)],
        ("prod", "g"): [point(DAY_AGO, 100, None)],
        ("prod", "h"): [point(DAY_AGO - 60, 2, 10.0), point(DAY_AGO + 60, 9, 40.0)],
    }
    assert texts(digest(verdicts, series)[1])[2] == "\n".join([
        "*Worst 5 by lag in seconds*, against 24 h before",
        "1. `a` on prod: *13 min* behind, lag 4.2 M (STOP) · ↗ vs 24 h ago: 60 s behind, lag 100,000",
        "2. `c` on prod: *95 s* behind, lag 13,000 (WARN) · → vs 24 h ago: 100 s behind, lag 14,000",
        "3. `b` on prod: *95 s* behind, lag 12,000 (WARN) · no data 24 h ago",
        "4. `g` on prod: *30 s* behind, lag 10 (OK) · ↘ vs 24 h ago: lag 100",
        "5. `h` on prod: *20 s* behind, lag 5 (OK) · ↗ vs 24 h ago: 10 s behind, lag 2",
    ])  # fmt: skip
    assert [v.group for v in worst(verdicts, limit=10)] == ["a", "c", "b", "g", "h", "d"]


# Case 4: a group whose lag in seconds is not known yet says so instead of printing '-' as a time.
def test_case_4_unknown_seconds_are_said_in_words() -> None:
    _, blocks = digest([verdict("new", total_lag=50, lag_seconds=None)])
    assert texts(blocks)[2].splitlines()[1] == "1. `new` on prod: lag *50*, time behind unknown (OK) · no data 24 h ago"


# Case 5: incidents of the period. Still open first (newest opened first), then resolved ones. Counted:
# opened within the period (orders, billing: 2), resolved within it (billing, and audit which was opened
# before the period: 2), still open (orders, and legacy open for 50 h: 2). `old` ended before the period
# and `future` opens after now: both left out.
def test_case_5_incidents_opened_resolved_and_still_open() -> None:
    incidents = [
        IncidentSummary("prod", "billing", NOW - 20 * HOUR, NOW - 18 * HOUR - 50 * 60, 50_000, "warn"),
        IncidentSummary("prod", "old", NOW - 40 * HOUR, NOW - 25 * HOUR, 9, "warn"),
        IncidentSummary("prod", "legacy", NOW - 50 * HOUR, None, 1_000, "critical"),
        IncidentSummary("prod", "orders", NOW - 6 * HOUR, None, 4_200_000, "page"),
        IncidentSummary("staging", "audit", NOW - 30 * HOUR, NOW - 23 * HOUR, None, "critical"),
        IncidentSummary("prod", "future", NOW + 60, None, 1, "warn"),
    ]
    fallback, blocks = digest(incidents=incidents)
    assert texts(blocks)[4] == "\n".join([
        "*Incidents*, last 24 h: 2 opened, 2 resolved, 2 still open",
        ":rotating_light: `orders` on prod (page) · opened Tue 03:00 · *still open* after 6 h · peak lag 4.2 M",
        ":red_circle: `legacy` on prod (critical) · opened Sun 07:00 · *still open* after 2 d 2 h · peak lag 1,000",
        ":large_yellow_circle: `billing` on prod (warn) · opened Mon 13:00 · resolved Mon 14:10 after 70 min · "
        "peak lag 50,000",
        ":red_circle: `audit` on staging (critical) · opened Mon 03:00 · resolved Mon 10:00 after 7 h · peak lag -",
    ])  # fmt: skip
    assert fallback.endswith("4 incident(s), 0 remediation(s)")


# Case 6: remediations of the period, newest first, with who asked and who approved (none, one, two);
# user ids become mentions, anything else is escaped text. One run 25 h ago is outside the period.
def test_case_6_remediations_run() -> None:
    runs = [
        RemediationSummary("prod", "orders", "scale", "U0ANA", ("U0BOB",), NOW - HOUR, "succeeded: 3 -> 6 replicas"),
        RemediationSummary("prod", "billing", "reset_offsets", "U0ANA", ("U0BOB", "W0CAT"), NOW - 5 * HOUR,
                           "failed: the group is active"),
        RemediationSummary("prod", "orders", "restart", "policy <auto>", (), NOW - 2 * HOUR, "succeeded"),
        RemediationSummary("prod", "orders", "drain", "U0ANA", ("U0BOB",), NOW - 25 * HOUR, "succeeded"),
    ]  # fmt: skip
    assert texts(digest(remediations=runs)[1])[6] == "\n".join([
        "*Remediations*, last 24 h: 3 run",
        "Tue 08:00 · _scale_ on `orders` (prod) · requested by <@U0ANA>, approved by <@U0BOB> · "
        "succeeded: 3 -&gt; 6 replicas",
        "Tue 07:00 · _restart_ on `orders` (prod) · requested by policy &lt;auto&gt;, no approval needed · succeeded",
        "Tue 04:00 · _reset_offsets_ on `billing` (prod) · requested by <@U0ANA>, approved by <@U0BOB>, <@W0CAT> · "
        "failed: the group is active",
    ])  # fmt: skip


# Case 7: times are the channel's: in Europe/Paris (UTC+1 in March before the switch) Tuesday 09:00 UTC
# is 10:00, and the footer names the zone. A shorter period changes the wording and what is counted.
def test_case_7_time_zone_and_period() -> None:
    paris = ZoneInfo("Europe/Paris")
    incidents = [IncidentSummary("prod", "billing", NOW - 20 * HOUR, NOW - 19 * HOUR, 5, "warn")]
    _, blocks = digest([verdict("x", total_lag=1, lag_seconds=1.0)], incidents=incidents, tz=paris, period=12 * HOUR)
    shown = texts(blocks)
    assert shown[0] == "Kafka lag digest · last 12 h · Tue 12 Mar 10:00"
    assert shown[4] == "*Incidents*, last 12 h: 0 opened, 0 resolved, 0 still open\nNo incidents."
    assert (
        shown[-1]
        == "As of Tue 12 Mar 2024 10:00 (Europe/Paris) · the worst groups' lag over 24 h is charted in the thread"
    )


# Case 8: group and cluster names are user data: Slack's control characters are escaped everywhere.
def test_case_8_names_are_escaped() -> None:
    odd = "<!channel> & co"
    _, blocks = digest(
        [verdict(odd, cluster="a<b", total_lag=3, lag_seconds=2.0)],
        incidents=[IncidentSummary("a<b", odd, NOW - HOUR, None, 3, "warn")],
        remediations=[RemediationSummary("a<b", odd, "scale", "U0ANA", (), NOW - HOUR, "ok")],
    )
    joined = "\n".join(texts(blocks))
    assert "<!channel>" not in joined and "a<b" not in joined
    assert "`&lt;!channel&gt; &amp; co` on a&lt;b" in joined


# Case 9: long lists are cut at 15 lines with "and N more", newest kept.
def test_case_9_long_lists_say_how_many_more() -> None:
    incidents = [IncidentSummary("prod", f"g{i:02}", NOW - i * 60, None, i, "warn") for i in range(40)]
    lines = texts(digest(incidents=incidents)[1])[4].splitlines()
    assert lines[0] == "*Incidents*, last 24 h: 40 opened, 0 resolved, 40 still open"
    assert [line.split("`")[1] for line in lines[1:-1]] == [f"g{i:02}" for i in range(15)]
    assert lines[-1] == "… and 25 more"


# Case 10: very long names cannot crowd a section past 3,000 characters: lines are cut, then fewer shown.
def test_case_10_very_long_names_stay_within_a_section() -> None:
    runs = [RemediationSummary("prod", "x" * 2_000 + str(i), "scale", "U0ANA", (), NOW - i, "ok") for i in range(9)]
    text = texts(digest(remediations=runs)[1])[6]
    assert len(text) <= 3_000
    # Lines are cut to 600 characters: the title (33) and four lines (4 x 601) make 2,437; a fifth would
    # make 3,038, over the limit. So four are shown, then "and 5 more".
    assert len(text.splitlines()) == 6
    assert text.endswith("… and 5 more")


def test_point_near_ignores_points_without_lag_and_far_ones() -> None:
    points = [point(DAY_AGO - 1_801, 1, 1.0), point(DAY_AGO + 5, None, None, Status.ERR), point(DAY_AGO + 100, 7, None)]
    assert point_near(points, DAY_AGO) == points[2]
    assert point_near(points[:2], DAY_AGO) is None


# ---------------------------------------------------------------------------------------------------
# Slack's limits, for any number of groups, incidents and remediations
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 500, 5_000])
def test_limits_hold_for_any_number_of_groups(n: int) -> None:
    name = "consumer-" + "n" * 240
    verdicts = [
        verdict(f"{name}-{i}", total_lag=i * 1_000, lag_seconds=float(i), status=Status(i % 5)) for i in range(n)
    ]
    series = {("prod", v.group): [point(DAY_AGO, 5, 5.0)] for v in verdicts[-5:]}
    incidents = [IncidentSummary("prod", v.group, NOW - 60, None, 1, "page") for v in verdicts]
    runs = [RemediationSummary("prod", v.group, "drain", "U0ANA", ("U0BOB", "U0CAT"), NOW - 1, "ok") for v in verdicts]

    fallback, blocks = digest(verdicts, series, incidents, runs)

    assert block_errors(blocks, max_blocks=MAX_MESSAGE_BLOCKS) == []
    assert len(fallback) <= MAX_TEXT
    assert texts(blocks)[1].startswith("No consumer group" if n == 0 else f"*{n:,} group")
    for section in (texts(blocks)[4], texts(blocks)[6]):  # incidents, remediations: as many as fit, then a count
        lines = section.splitlines()
        if n > 15:
            shown = len(lines) - 2
            assert lines[-1] == f"… and {n - shown:,} more"
            assert 5 <= shown < 15  # ~330 characters a line: cut by the 3,000 characters, not by the 15 lines
        else:
            assert len(lines) == 1 + max(n, 1)


# ---------------------------------------------------------------------------------------------------
# The chart
# ---------------------------------------------------------------------------------------------------

TAB_BLUE = (31, 119, 180)  # matplotlib's first line colour
TAB_BROWN = (140, 86, 75)  # its sixth: must never appear, the chart draws five lines at most


def pixels_of(png: bytes, colour: tuple[int, int, int]) -> int:
    image = matplotlib.image.imread(io.BytesIO(png), format="png")
    rgb = np.round(image[:, :, :3] * 255).astype(int)
    return int(np.all(np.abs(rgb - np.array(colour)) <= 2, axis=2).sum())


def hourly(lag: int) -> list[tuple[float, int | None]]:
    return [(NOW - DAY + i * HOUR, lag * i) for i in range(25)]


def test_the_chart_is_a_real_png_of_the_expected_size() -> None:
    png = lag_chart({"orders (prod)": hourly(1_000)}, now=NOW, tz=UTC)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(io.BytesIO(png), format="png")
    assert image.shape[:2] == (450, 1000)
    assert pixels_of(png, TAB_BLUE) > 500  # the line was drawn


def test_the_chart_draws_five_lines_at_most_and_none_without_data() -> None:
    six = {f"g{i}": hourly(1_000 * (i + 1)) for i in range(6)}
    assert pixels_of(lag_chart(six, now=NOW, tz=UTC), TAB_BROWN) == 0
    assert pixels_of(lag_chart(dict(list(six.items())[:5]), now=NOW, tz=UTC), TAB_BLUE) > 500
    empty = lag_chart({}, now=NOW, tz=UTC)
    assert empty[:8] == b"\x89PNG\r\n\x1a\n" and pixels_of(empty, TAB_BLUE) == 0


def test_unknown_lag_is_a_gap_not_a_zero() -> None:
    gaps = [(at, None if i % 2 else lag) for i, (at, lag) in enumerate(hourly(1_000))]  # no two known in a row
    only_known_drawn = lag_chart({"g": gaps}, now=NOW, tz=UTC)
    assert pixels_of(only_known_drawn, TAB_BLUE) < 100  # the legend's sample line only: no segment joins points


def test_chart_series_keeps_the_last_24_h_of_each_group() -> None:
    groups = [verdict("orders", total_lag=3, lag_seconds=3.0)]
    series = {("prod", "orders"): [point(DAY_AGO - 60, 1, 1.0), point(DAY_AGO, 2, 2.0), point(NOW, None, None)]}
    assert chart_series(groups, series, now=NOW) == {"orders (prod)": [(DAY_AGO, 2), (NOW, None)]}


def test_odd_names_do_not_break_the_chart() -> None:
    png = lag_chart({"_private $x$ (prod)": hourly(5), "x" * 300: hourly(7)}, now=NOW, tz=UTC)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_chart_is_drawn_headless_and_matplotlib_is_imported_lazily() -> None:
    script = (
        "import sys, zoneinfo\n"
        "from lagbot.slack import digest\n"
        "assert 'matplotlib' not in sys.modules, 'the digest imported matplotlib eagerly'\n"
        "png = digest.lag_chart({'g': [(0.0, 1), (3600.0, 2)]}, now=3600.0, tz=zoneinfo.ZoneInfo('UTC'))\n"
        "assert png[:4] == b'\\x89PNG'\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot (global state) was used'\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}  # no DISPLAY, no MPLBACKEND
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
