"""The `digest:` settings: defaults, and bad values named by file (or environment variable) and field."""

from __future__ import annotations

from typing import Any

import pytest

from lagbot.core.config import ConfigError, build_settings
from lagbot.core.digest_config import DigestConfig

CLUSTERS = [{"name": "prod", "bootstrap_servers": "kafka:9092"}]


def settings(digest: dict[str, Any]) -> Any:
    return build_settings({"clusters": CLUSTERS, "digest": digest}, source="lagbot.yaml")


def test_defaults() -> None:
    digest = build_settings({"clusters": CLUSTERS}, source="lagbot.yaml").digest
    assert (digest.history.retention, digest.history.resolution, digest.channels) == (172_800.0, 60.0, [])
    one = DigestConfig(channel="C0ALERTS")
    assert (one.cron, one.timezone, one.period) == ("0 9 * * *", "UTC", 86_400.0)


def test_a_digest_with_its_schedule_in_its_zone() -> None:
    digest = settings(
        {
            "history": {"retention": "3d", "resolution": "5m"},
            "channels": [{"channel": "#kafka-alerts", "cron": "30 8 * * mon-fri", "timezone": "Europe/Paris",
                          "period": "12h"}],
        }
    ).digest  # fmt: skip
    assert (digest.history.retention, digest.history.resolution) == (259_200.0, 300.0)
    [config] = digest.channels
    assert (config.channel, config.period, str(config.zone)) == ("#kafka-alerts", 43_200.0, "Europe/Paris")
    trigger = config.trigger()
    assert str(trigger.timezone) == "Europe/Paris"
    assert {f.name: str(f) for f in trigger.fields if not f.is_default} == {
        "month": "*", "day": "*", "day_of_week": "mon-fri", "hour": "8", "minute": "30",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("digest", "expected"),
    [
        ({"channels": [{"channel": "C1", "cron": "0 9 * *"}]},
         "lagbot.yaml: digest.channels.0.cron: '0 9 * *' is not a 5-field crontab (minute hour day month weekday): "
         "Wrong number of fields; got 4, expected 5 (got '0 9 * *')"),
        ({"channels": [{"channel": "C1", "cron": "61 9 * * *"}]},
         "lagbot.yaml: digest.channels.0.cron: '61 9 * * *' is not a 5-field crontab (minute hour day month weekday): "
         "Error validating expression '61': the last value (61) is higher than the maximum value (59) "
         "(got '61 9 * * *')"),
        ({"channels": [{"channel": "C1", "timezone": "Mars/Olympus"}]},
         "lagbot.yaml: digest.channels.0.timezone: 'Mars/Olympus' is not an IANA time zone (such as 'UTC' or "
         "'Europe/Paris') (got 'Mars/Olympus')"),
        ({"channels": [{"channel": "kafka alerts"}]},
         "lagbot.yaml: digest.channels.0.channel: 'kafka alerts' is not a channel: give its id (C0123ABCD) or its "
         "name (#kafka-alerts), without spaces (got 'kafka alerts')"),
        ({"channels": [{"channel": "C1", "period": "3d"}]},
         "lagbot.yaml: digest: the digest of C1 covers 3 d but history is kept 2 d: raise digest.history.retention "
         "or shorten the period"),
        ({"history": {"retention": "12h"}},
         "lagbot.yaml: digest.history.retention: 12 h is too short: keep at least 1d, the digest compares lag with "
         "24 h before (got '12h')"),
        ({"history": {"resolution": 0.5}},
         "lagbot.yaml: digest.history.resolution: 0.5 is not a whole number of seconds >= 1 (got 0.5)"),
        ({"channels": [{"channel": "C1", "colour": "red"}]},
         "lagbot.yaml: digest.channels.0.colour: Extra inputs are not permitted (got 'red')"),
    ],
    ids=["cron-4-fields", "cron-minute-61", "unknown-zone", "channel-with-space", "period-beyond-history",
         "retention-under-a-day", "fractional-resolution", "unknown-field"],
)  # fmt: skip
def test_bad_digest_settings_name_the_field(digest: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings(digest)
    assert str(caught.value) == expected


def test_the_environment_sets_digests_and_is_named_when_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAGBOT_DIGEST__CHANNELS", '[{"channel": "C1", "timezone": "Asia/Tokyo"}]')
    assert [c.timezone for c in settings({}).digest.channels] == ["Asia/Tokyo"]
    monkeypatch.setenv("LAGBOT_DIGEST__CHANNELS", '[{"channel": "C1", "timezone": "Nowhere"}]')
    with pytest.raises(ConfigError) as caught:
        settings({})
    assert str(caught.value).startswith("environment variable LAGBOT_DIGEST__CHANNELS: digest.channels.0.timezone: ")
