"""The storm decisions (lagbot.service.storms), pure: `now` passed in, ids made by the test.

A storm: more than `threshold` new incidents in one channel within `window`. The decisions are which new incident
is folded, when the summary is posted, edited (bounded) and when the storm ends.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import replace
from itertools import count

import pytest
import yaml

from lagbot.core.config import ConfigError, StormConfig, build_settings
from lagbot.core.model import Severity, Status
from lagbot.service.incidents import Incident
from lagbot.service.storms import (
    ChannelOpens,
    Member,
    Show,
    Storm,
    StormSummary,
    admit,
    ended_in,
    finished,
    is_stormy,
    member_changed,
    next_show,
    recent_opens,
    shared_prefix,
    worst_first,
)
from lagbot.slack import render
from lagbot.slack.wording import storms as wording

T0 = 1_700_000_000.0
CONFIG = StormConfig(threshold=3, window=60, update_every=10, worst=2)


def ids() -> Iterator[str]:
    return (f"storm-{n}" for n in count(1))


def flood(n: int, *, at: float = T0, every: float = 0.1) -> tuple[ChannelOpens, Storm | None, list[str | None]]:
    """`n` new incidents in channel C1, `every` seconds apart: the channel, its storm and where each went."""
    opens, storm, went = ChannelOpens(), None, []
    made = ids()
    for i in range(n):
        admission = admit(opens, storm, channel="C1", now=at + i * every, config=CONFIG, new_id=lambda: next(made))
        opens, went = admission.channel, [*went, admission.fold_into]
        storm = admission.storm or storm
    return opens, storm, went


def test_up_to_the_threshold_every_new_incident_is_posted_as_usual() -> None:
    opens, storm, went = flood(3)
    assert went == [None, None, None]
    assert storm is None and opens.storm_id is None and len(opens.recent) == 3


def test_the_one_past_the_threshold_starts_a_storm_and_every_later_one_is_folded_into_it() -> None:
    opens, storm, went = flood(300)
    assert went == [None, None, None] + ["storm-1"] * 297
    assert storm is not None and (storm.id, storm.channel, storm.started_at) == ("storm-1", "C1", T0 + 0.3)
    assert storm.folded == 297 and storm.is_on and not storm.posted
    assert opens.storm_id == "storm-1"
    assert len(opens.recent) == CONFIG.threshold + 1  # bounded: 4 timestamps kept, not 300


def test_new_incidents_spread_wider_than_the_window_never_make_a_storm() -> None:
    _, storm, went = flood(50, every=20.0)  # 3 per minute: never more than 3 within 60 s
    assert storm is None and went == [None] * 50


def test_the_window_is_sliding_and_keeps_only_what_a_decision_needs() -> None:
    assert recent_opens([T0, T0 + 10, T0 + 59.9, T0 + 60], now=T0 + 60, config=CONFIG) == (T0 + 10, T0 + 59.9, T0 + 60)
    assert not is_stormy([T0, T0 + 1, T0 + 2, T0 + 3], now=T0 + 61, config=CONFIG)
    assert is_stormy([T0, T0 + 1, T0 + 2, T0 + 3], now=T0 + 59, config=CONFIG)


def test_the_summary_is_posted_once_then_edited_no_more_often_than_update_every() -> None:
    opens, storm, _ = flood(20)
    assert storm is not None
    storm, show = next_show(storm, opens, now=T0 + 2, config=CONFIG)
    assert show is Show.POST and storm.posted and not storm.dirty and storm.shown_at == T0 + 2
    assert next_show(storm, opens, now=T0 + 3, config=CONFIG) == (storm, None)  # nothing changed: no edit
    changed = replace(storm, dirty=True, folded=21)
    assert next_show(changed, opens, now=T0 + 11.9, config=CONFIG) == (changed, None)  # changed, too soon
    edited, show = next_show(changed, opens, now=T0 + 12, config=CONFIG)
    assert show is Show.UPDATE and edited == replace(changed, dirty=False, shown_at=T0 + 12)


def test_the_storm_ends_once_a_window_holds_no_more_than_the_threshold_and_says_so_at_once() -> None:
    opens, storm, _ = flood(20, every=1.0)  # T0 .. T0 + 19: the newest 4 from T0 + 16
    assert storm is not None
    storm, _ = next_show(storm, opens, now=T0 + 20, config=CONFIG)
    still, show = next_show(replace(storm, dirty=True), opens, now=T0 + 75.5, config=CONFIG)  # 4 within 60 s
    assert show is Show.UPDATE and still.is_on  # (an edit: it changed and the last one is 10 s old)
    over, show = next_show(storm, opens, now=T0 + 76, config=CONFIG)  # T0 + 16 left the window: 3 within
    assert show is Show.UPDATE and over.ended_at == T0 + 76 and not over.dirty
    assert ended_in(opens, over) == replace(opens, storm_id=None)
    assert next_show(over, ended_in(opens, over), now=T0 + 200, config=CONFIG) == (over, None)  # said once


def test_after_a_storm_the_next_new_incident_is_posted_as_usual_and_another_flood_is_a_new_storm() -> None:
    opens, storm, _ = flood(20)
    assert storm is not None
    over, _ = next_show(replace(storm, posted=True), opens, now=T0 + 100, config=CONFIG)
    opens = ended_in(opens, over)
    made = iter(["storm-2"])
    went: list[str | None] = []
    current: Storm | None = over  # the channel's storm, as lagbot.service.storms.Storms finds it
    for i in range(5):
        admission = admit(opens, current, channel="C1", now=T0 + 100 + i, config=CONFIG, new_id=lambda: next(made))
        opens, went, current = admission.channel, [*went, admission.fold_into], admission.storm or current
    assert went == [None, None, None, "storm-2", "storm-2"]


def test_a_storm_is_finished_when_ended_shown_and_every_folded_incident_resolved() -> None:
    over = Storm("storm-1", "C1", T0, folded=2, ended_at=T0 + 60, posted=True)
    still = Member("prod", "a", "warn", 10, True)
    done = replace(still, open=False)
    assert not finished(over, [still, done])
    assert finished(over, [done, done])
    assert not finished(replace(over, dirty=True), [done])
    assert not finished(replace(over, ended_at=None), [done])


def incident(**changes: object) -> Incident:
    base = Incident(id="i1", cluster="prod", group="g", channel="C1", opened_at=T0, severity=Severity.WARN,
                    peak_severity=Severity.WARN, peak_lag=100, primary_cause=None, status=Status.WARN, updated_at=T0,
                    storm="storm-1")  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_folded_incident_changes_its_summary_only_when_what_the_summary_shows_changed() -> None:
    before = incident()
    assert member_changed(None, before)
    assert not member_changed(before, replace(before, updated_at=T0 + 60))  # another check, nothing new
    assert member_changed(before, replace(before, severity=Severity.CRITICAL))
    assert member_changed(before, replace(before, peak_lag=200))
    assert member_changed(before, replace(before, resolved_at=T0 + 60))
    assert member_changed(before, replace(before, id="i2"))


def test_worst_first_is_open_then_severity_then_lag_then_name() -> None:
    members = [
        Member("prod", "resolved-big", "ok", 9_000_000, False),
        Member("prod", "warn-big", "warn", 5_000, True),
        Member("prod", "page", "page", 10, True),
        Member("prod", "warn-b", "warn", 100, True),
        Member("prod", "warn-a", "warn", 100, True),
    ]
    assert [m.group for m in worst_first(members)] == ["page", "warn-big", "warn-a", "warn-b", "resolved-big"]


def test_shared_prefix_of_the_groups_names() -> None:
    assert shared_prefix(["load-17", "load-3", "load-200"]) == "load-"
    assert shared_prefix(["a", "b"]) == ""
    assert shared_prefix(["only"]) == ""


def test_the_summary_names_the_worst_groups_escaped_and_how_to_narrow_the_watch() -> None:
    hostile = "load-<!channel>`x"
    plain = [Member("prod", f"load-{i}", "warn", i, True) for i in range(5)]
    members = worst_first([*plain, Member("prod", hostile, "critical", 1, True)])
    storm = Storm("storm-1", "C1", T0, folded=6, posted=True)
    summary = render.storm_summary(StormSummary(storm, members, 3, 60.0, 2, T0))
    text, blocks = summary.text, summary.json_blocks()
    assert text == "Incident storm on: 6 new incidents folded into one summary, 6 still open"
    shown = "\n".join(b["text"]["text"] if "text" in b else b["elements"][0]["text"] for b in blocks)
    assert "<!channel>" not in shown and "`x" not in shown
    assert "`load-&lt;!channel&gt;\u02cbx` on `prod`: *CRITICAL*" in shown
    assert "*Worst first* (2 of 6):" in shown and "`load-4` on `prod`: *WARN*, peak lag 4" in shown
    assert "`load-3`" not in shown  # worst = 2: two named
    assert "… and 4 more" in shown
    assert "e.g. `exclude: ['load\\-.*']`" in shown and "`groups.include`" in shown
    over = render.storm_summary(StormSummary(replace(storm, ended_at=T0 + 60), members, 3, 60.0, 2, T0 + 60))
    assert over.text == "Incident storm over: 6 new incidents folded into one summary, 6 still open"
    assert over.json_blocks()[0]["text"]["text"].startswith(
        ":cyclone: *Incident storm over*: no more than 3 new incidents"
    )


@pytest.mark.parametrize(
    ("storm", "problem"),
    [
        ({"threshold": 0}, "incidents.storm.threshold"),
        ({"window": "soon"}, "incidents.storm.window"),
        ({"update_every": 0.5}, "incidents.storm.update_every"),
        ({"worst": 100}, "incidents.storm.worst"),
        ({"thresold": 10}, "incidents.storm.thresold"),
    ],
)
def test_a_bad_storm_setting_is_refused_naming_the_field(storm: dict[str, object], problem: str) -> None:
    data = {"clusters": [{"name": "prod", "bootstrap_servers": "k:9092"}], "incidents": {"storm": storm}}
    with pytest.raises(ConfigError) as refused:
        build_settings(data, source="lagbot.yaml")
    assert f"lagbot.yaml: {problem}:" in str(refused.value)


def test_the_storm_defaults() -> None:
    settings = build_settings({"clusters": [{"name": "prod", "bootstrap_servers": "k:9092"}]}, source="test")
    assert settings.incidents.storm == StormConfig(threshold=10, window=300.0, update_every=30.0, worst=10)
    tuned = build_settings(
        {"clusters": [{"name": "p", "bootstrap_servers": "k:1"}], "incidents": {"storm": {"window": "10m"}}},
        source="test",
    )
    assert tuned.incidents.storm.window == 600.0


def test_a_storm_whose_window_went_quiet_folds_no_more_even_before_its_end_was_said() -> None:
    opens, storm, _ = flood(20)  # on, and not yet ended by next_show
    assert storm is not None and storm.is_on
    later = admit(opens, storm, channel="C1", now=T0 + 120, config=CONFIG, new_id=lambda: "storm-2")
    assert later.fold_into is None and later.channel == ChannelOpens((T0 + 120,), None)
    over, show = next_show(replace(storm, posted=True), later.channel, now=T0 + 120, config=CONFIG)
    assert show is Show.UPDATE and over.ended_at == T0 + 120


@pytest.mark.parametrize("prefix", ["load-", "app.orders.", "it's-", "x\\y "])
def test_the_advice_s_exclude_is_yaml_a_user_can_paste_and_it_drops_those_groups(prefix: str) -> None:
    advice = wording.storm_advice(["prod"], re.escape(prefix))
    [example] = re.findall(r"e\.g\. `(exclude: .*?)`\)", advice)
    [pattern] = yaml.safe_load(html.unescape(example))["exclude"]
    assert re.fullmatch(pattern, f"{prefix}7") and not re.fullmatch(pattern, f"other-{prefix}7")
