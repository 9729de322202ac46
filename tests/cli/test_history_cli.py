"""`lagbot history` and `lagbot thresholds suggest` on a history stored in a real redis-server (`now` injected), and
their refusals through `lagbot.cli.main` (exit 4, one line naming what is wrong)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import redis
import yaml

from lagbot.cli.history import safe, show_history, show_suggestion
from lagbot.cli.main import main
from lagbot.core.config import Settings
from tests.support.lag_histories import DAY, HOUR, NIGHTS, START, STEP, store_nights

HOSTILE = "orders\x1b[31m\u202e"
END = START + NIGHTS * DAY - STEP


def settings(redis_url: str) -> Settings:
    return Settings.model_validate(
        {"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}], "redis_url": redis_url,
         "thresholds": {"warn": {"messages": 1_000}}}
    )  # fmt: skip


@pytest.fixture
def stored(redis_client: redis.Redis) -> Settings:
    kwargs = redis_client.connection_pool.connection_kwargs
    config = settings(f"redis://{kwargs['host']}:{kwargs['port']}/0")
    store_nights(redis_client, config, HOSTILE)
    return config


def test_history_prints_a_row_per_day_and_the_pattern_with_the_name_escaped(
    stored: Settings, redis_client: redis.Redis, tmp_path: Path
) -> None:
    out = io.StringIO()
    png = tmp_path / "lag.png"

    code = show_history(stored, redis_client, HOSTILE, None, days=3, png=png, as_json=False, now=END, out=out)

    assert code == 0
    text = out.getvalue()
    assert "\x1b" not in text and "\u202e" not in text
    lines = text.splitlines()
    assert lines[0] == "History of orders\\x1b[31m\\u202e (prod), last 3 d: 289 stored point(s)"  # both ends in
    assert lines[2].split() == ["day", "peak", "lag", "peak", "behind", "at", "WARN", "CRITICAL+", "unreadable",
                                "incidents"]  # fmt: skip
    assert [line.split()[0] for line in lines[3:7]] == ["2023-11-23", "2023-11-24", "2023-11-25", "2023-11-26"]
    assert lines[4].split() == ["2023-11-24", "3,000", "-", "30", "min", "-", "-", "1"]
    assert lines[-1] == (
        "Recurring patterns: most nights from 02:00, peak ~3k, drains in ~30 min; 7 of the last 7 nights "
        "(named only: nothing is silenced)"
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_history_as_json(stored: Settings, redis_client: redis.Redis) -> None:
    out = io.StringIO()

    show_history(stored, redis_client, HOSTILE, "prod", days=7, png=None, as_json=True, now=END, out=out)

    document = json.loads(out.getvalue())
    assert document["group"] == HOSTILE
    assert document["points"] == NIGHTS * 96
    assert len(document["incidents"]) == NIGHTS
    assert document["patterns"] == ["most nights from 02:00, peak ~3k, drains in ~30 min; 7 of the last 7 nights"]


def test_thresholds_suggest_prints_both_levels_backtested_and_the_yaml(
    stored: Settings, redis_client: redis.Redis
) -> None:
    out = io.StringIO()

    code = show_suggestion(stored, redis_client, HOSTILE, None, days=30, as_json=False, now=END, out=out)

    assert code == 0
    text = out.getvalue()
    assert "\x1b" not in text and "\u202e" not in text
    counted = [line for line in text.splitlines() if line.startswith(("incidents", "actual"))]
    rows = {line[:31].strip(): line[31:].split("  ") for line in counted}
    # 14 points of 3,000 in 672 (2%): the 99.9th percentile is 3,000 -> x1.5 = 4,500 -> 5,000: none would open
    assert "5,000 msg or 30 s behind" in text
    assert [c.strip() for c in rows["incidents it would open"] if c.strip()] == ["7", "0"]
    assert [c.strip() for c in rows["actual ones it misses"] if c.strip()] == ["0", "7"]
    snippet = text[text.index("# A policy rule") :]
    data = yaml.safe_load(snippet)
    assert data["rules"][0]["thresholds"]["warn"]["messages"] == 5_000
    assert data["rules"][0]["match"]["group"] == "orders\x1b\\[31m\u202e"  # re.escape of the exact name


def test_thresholds_suggest_as_json_counts(stored: Settings, redis_client: redis.Redis) -> None:
    out = io.StringIO()

    show_suggestion(stored, redis_client, HOSTILE, None, days=30, as_json=True, now=END, out=out)

    document = json.loads(out.getvalue())
    assert document["proposal"] == {"messages": 5_000, "seconds": 30.0, "healthy_points": NIGHTS * 96}
    assert [s for s, _ in document["current_backtest"]["would_open"]] == [START + d * DAY + 2 * HOUR
                                                                         for d in range(NIGHTS)]  # fmt: skip
    assert document["proposed_backtest"]["would_open"] == []
    assert document["proposed_backtest"]["missed_acted"] == []
    assert document["current"]["messages"] == 1_000


def test_an_unknown_cluster_is_named_and_changes_nothing(
    stored: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "lagbot.yaml"
    config.write_text(yaml.safe_dump(stored.model_dump(mode="json", include={"clusters", "redis_url"})))

    with pytest.raises(SystemExit) as exited:
        main(["history", HOSTILE, "--cluster", "nope\x1b", "-c", str(config)])

    assert exited.value.code == 4
    err = capsys.readouterr().err
    assert err == "lagbot: --cluster nope\\x1b: no such cluster in the configuration (clusters: prod)\n"


def test_safe_escapes_only_what_a_terminal_would_act_on() -> None:
    assert safe("orders-é") == "orders-é"
    assert safe("a\nb\x07\u202e") == "a\\nb\\x07\\u202e"
