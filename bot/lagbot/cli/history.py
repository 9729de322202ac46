"""`lagbot history <group>` and `lagbot thresholds suggest <group>`: a group's stored past, read from the bot's Redis.

- `history`: one row per day (peak lag and seconds behind, time at WARN and CRITICAL+, unreadable, incidents), the
  recurring patterns, and with `--png FILE` the lag over the period as a chart.
- `thresholds suggest`: WARN limits proposed from the group's healthy history, the current and proposed levels
  backtested side by side on it, and the policy YAML to review. It never changes a setting.

Exit codes: 0 shown, 3 Redis unreachable, 4 bad usage or configuration (named). Names are shown with control
characters escaped: a group name cannot move the terminal's cursor or change its colours.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from lagbot.cli.parsing import Commands, Number, Parser, command, command_group
from lagbot.core.errors import ConfigError

if TYPE_CHECKING:
    import redis

    from lagbot.core.config import Level, Settings
    from lagbot.service.history_read import GroupHistory, Suggestion

EXIT_REDIS_UNREACHABLE = 3
DAY = 86_400.0


def register(commands: Commands[Parser]) -> None:
    """Declare `history` and `thresholds` under `lagbot` (lagbot.cli.main's command tree)."""
    command(commands, "history", history, _history_options)
    command_group(commands, "thresholds", "Thresholds from a group's own history, backtested.", _thresholds_commands)


def _common(parser: Parser, days: int) -> None:
    parser.add_argument("group", metavar="GROUP", help="The consumer group (its exact name).")
    parser.add_argument("--cluster", help="The group's cluster (by name); needed when several clusters have it.")
    parser.add_argument("-c", "--config", type=Path, help="YAML configuration file.")
    parser.add_argument("--days", type=Number(int, (1, 366)), default=days, help="How far back to look.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print one JSON object.")


def _history_options(parser: Parser) -> None:
    _common(parser, 7)
    parser.add_argument("--png", type=Path, help="Also draw the lag over the period into this PNG file.")


def _thresholds_commands(thresholds: Commands[Parser]) -> None:
    suggest = command(thresholds, "suggest", suggest_thresholds)
    _common(suggest, 30)


# ---------------------------------------------------------------------------------------------------
# The commands
# ---------------------------------------------------------------------------------------------------


def history(*, group: str, cluster: str | None, config: Path | None, days: int, as_json: bool, png: Path | None) -> int:
    """A group's stored history: a row per day, its recurring patterns, and a chart with --png.

    Exit codes: 0 shown, 3 Redis unreachable, 4 bad usage or configuration.
    """
    import redis

    settings, client = _connect(config)
    try:
        return show_history(settings, client, group, cluster, days=days, png=png, as_json=as_json, now=time.time(),
                            out=sys.stdout)  # fmt: skip
    except redis.RedisError as exc:
        return _unreachable(settings, exc)


def suggest_thresholds(*, group: str, cluster: str | None, config: Path | None, days: int, as_json: bool) -> int:
    """Propose WARN thresholds from the group's healthy history and backtest them; changes nothing.

    Prints the current and proposed levels side by side with the incidents each would have opened, how their starts
    compare with the incidents actually opened, and any incident a human acted on that a level would have missed;
    then the policy YAML to review. Exit codes: 0 shown, 3 Redis unreachable, 4 bad usage or configuration.
    """
    import redis

    settings, client = _connect(config)
    try:
        return show_suggestion(settings, client, group, cluster, days=days, as_json=as_json, now=time.time(),
                               out=sys.stdout)  # fmt: skip
    except redis.RedisError as exc:
        return _unreachable(settings, exc)


def _connect(config: Path | None) -> tuple[Settings, redis.Redis]:
    import redis

    from lagbot.core import messages
    from lagbot.core.config import load_settings

    settings = load_settings(config)
    if not settings.redis_url:
        raise ConfigError(messages.bot_needs_redis())
    return settings, redis.Redis.from_url(settings.redis_url, socket_timeout=10, socket_connect_timeout=5)


def _unreachable(settings: Settings, exc: Exception) -> int:
    from lagbot.core import messages

    print(messages.redis_unreachable(settings.redis_url or "", str(exc)), file=sys.stderr)
    return EXIT_REDIS_UNREACHABLE


# ---------------------------------------------------------------------------------------------------
# What they show (`now` and the output passed in)
# ---------------------------------------------------------------------------------------------------


def read_past(settings: Settings, client: redis.Redis, group: str, cluster: str | None, *, days: int,
              now: float) -> GroupHistory:  # fmt: skip
    """The group's stored past over the last `days` days (its cluster resolved: named, or the only one that has it)."""
    from lagbot.service.audit import AuditLog
    from lagbot.service.history_read import read_group
    from lagbot.service.incidents import RedisIncidentStore
    from lagbot.service.rollups import make_tiered_history

    store = make_tiered_history(settings.digest.history, client)
    where = _cluster_of(settings, [(c.name, store.groups(c.name)) for c in settings.clusters], group, cluster)
    incidents = RedisIncidentStore(client, keep=settings.digest.history.longest)
    return read_group(store, incidents, AuditLog(client), where, group, since=now - days * DAY, until=now)


def _cluster_of(settings: Settings, known: list[tuple[str, list[str]]], group: str, cluster: str | None) -> str:
    from lagbot.cli import wording

    names = [name for name, _ in known]
    if cluster is not None:
        if cluster not in names:
            raise ConfigError(wording.history_unknown_cluster(safe(cluster), [safe(n) for n in names]))
        return cluster
    having = [name for name, groups in known if group in groups]
    if len(having) == 1:
        return having[0]
    if not having and len(names) == 1:
        return names[0]  # one cluster: say there is no history rather than ask for --cluster
    if not having:
        raise ConfigError(wording.history_unknown_group(safe(group)))
    raise ConfigError(wording.history_group_on_clusters(safe(group), [safe(n) for n in having]))


def show_history(settings: Settings, client: redis.Redis, group: str, cluster: str | None, *, days: int,
                 png: Path | None, as_json: bool, now: float, out: TextIO) -> int:  # fmt: skip
    from lagbot.service.history_read import daily_rows
    from lagbot.service.pattern_notes import patterns_of
    from lagbot.service.patterns import PatternRules, describe
    from lagbot.service.rollups import make_tiered_history

    past = read_past(settings, client, group, cluster, days=days, now=now)
    tz = settings.digest.history.zone
    rows = daily_rows(past, tz)
    store = make_tiered_history(settings.digest.history, client)  # patterns look back their own 4 weeks
    patterns = patterns_of(store, past.cluster, group, now=now, tz=tz, width=settings.digest.history.rollup_resolution,
                           rules=PatternRules(min_points=1))  # fmt: skip
    if png is not None:
        from lagbot.slack.history_chart import span_chart

        series = {safe(group): [(p.at, p.total_lag) for p in past.series]}
        png.write_bytes(span_chart(series, since=past.since, until=now, tz=tz, title=safe(group)))
    if as_json:
        document: dict[str, Any] = {
            "cluster": past.cluster,
            "group": group,
            "days": [row.__dict__ for row in rows],
            "patterns": [describe(p) for p in patterns],
            "incidents": [
                {
                    "opened_at": i.opened_at,
                    "resolved_at": i.resolved_at,
                    "peak_lag": i.peak_lag,
                    "cause": i.primary_cause,
                }
                for i in past.incidents
            ],
            "points": len(past.series),
        }
        out.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
        return 0
    out.write(history_text(past, rows, [describe(p) for p in patterns], days) + "\n")
    return 0


def history_text(past: GroupHistory, rows: list[Any], patterns: list[str], days: int) -> str:
    from lagbot.service import wording

    if not past.series:
        return wording.history_no_points(safe(past.group), safe(past.cluster))
    table = [wording.history_columns()] + [
        wording.history_cells(r.day, r.peak_lag, r.peak_seconds, r.warn_seconds, r.critical_seconds,
                              r.unreadable_seconds, r.incidents) for r in rows
    ]  # fmt: skip
    title = wording.history_title(safe(past.group), safe(past.cluster), days * DAY, len(past.series))
    return "\n".join([title, "", *wording.columns(table), "", wording.history_patterns(patterns)])


def show_suggestion(settings: Settings, client: redis.Redis, group: str, cluster: str | None, *, days: int,
                    as_json: bool, now: float, out: TextIO) -> int:  # fmt: skip
    from lagbot.service.history_read import suggest

    past = read_past(settings, client, group, cluster, days=days, now=now)
    level = current_warn(settings, past.cluster, group)
    made = suggest(past, level, settings.incidents)
    if as_json:
        out.write(json.dumps(suggestion_json(made), indent=2, sort_keys=True) + "\n")
        return 0
    out.write(suggestion_text(made, days) + "\n")
    return 0


def current_warn(settings: Settings, cluster: str, group: str) -> Level:
    """The WARN level that applies to the group now: its policy rule's thresholds, else the configuration's."""
    from lagbot.policies.loader import default_policy_path, load_policy

    rule = load_policy(settings.policy_file or default_policy_path()).match(cluster, group)
    thresholds = rule.thresholds if rule.thresholds is not None else settings.thresholds
    return thresholds.warn


def suggestion_text(made: Suggestion, days: int) -> str:
    from lagbot.service import wording
    from lagbot.service.history_read import suggestion_table

    title = wording.suggestion_title(safe(made.group), safe(made.cluster), made.points, days * DAY)
    lines = [title, ""]
    if made.proposal is None:
        lines.append(wording.suggestion_no_proposal())
    else:
        lines.append(wording.suggestion_basis(made.proposal.healthy_points))
    lines += ["", *wording.columns(suggestion_table(made))]
    if made.snippet is not None:
        lines += ["", made.snippet.rstrip("\n")]
    return "\n".join(lines)


def suggestion_json(made: Suggestion) -> dict[str, Any]:
    def result(r: Any) -> dict[str, Any] | None:
        if r is None:
            return None
        return {
            "would_open": [[s.start, s.end] for s in r.would_open],
            "also_opened": [[s.start, delta] for s, delta in r.also_opened],
            "missed": [[s.start, s.end] for s in r.missed],
            "missed_acted": [[s.start, s.end] for s in r.missed_acted],
        }

    return {
        "cluster": made.cluster,
        "group": made.group,
        "points": made.points,
        "proposal": None if made.proposal is None else made.proposal.__dict__,
        "current": made.current.model_dump(),
        "proposed": None if made.proposed is None else made.proposed.model_dump(),
        "actual": [[s.start, s.end] for s in made.actual],
        "acted": [[s.start, s.end] for s in made.acted],
        "current_backtest": result(made.current_result),
        "proposed_backtest": result(made.proposed_result),
        "yaml": made.snippet,
    }


# ---------------------------------------------------------------------------------------------------
# Plain text
# ---------------------------------------------------------------------------------------------------


def safe(name: str) -> str:
    """A name as a terminal may show it: control and other unprintable characters escaped (\\x1b, \\n, \\u202e)."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in name)
