"""Settings of the daily digest and of the lag history behind it (`digest:` in the configuration file).

Kept apart from lagbot.service.digest so that lagbot.core.config can import it without pulling in Slack or matplotlib,
and it imports nothing from lagbot.core.config at import time (lagbot.core.config imports this module).

```yaml
digest:
  history: {retention: 2d, resolution: 60}   # one point per group per minute, kept two days
  # and, beside it, 15-minute min/max/last rollups kept 30 days (rollup_retention: 0 keeps none):
  # history: {retention: 2d, resolution: 60, rollup_resolution: 15m, rollup_retention: 30d}
  channels:
    - {channel: C0123ALERTS, cron: "0 9 * * mon-fri", timezone: Europe/Paris, period: 1d}
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from lagbot.core import messages

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger

DAY = 86_400.0


def _duration(value: object) -> float:
    from lagbot.core.config import parse_duration  # lagbot.core.config imports this module: resolve at validation time

    return parse_duration(value)


Duration = Annotated[float, BeforeValidator(_duration)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HistoryConfig(_Strict):
    """How much lag history is kept per group (lagbot.service.history)."""

    retention: Duration = Field(default=2 * DAY)
    """Points older than this are dropped; at least 1 d, since the digest compares with 24 h before."""
    resolution: Duration = Field(default=60.0)
    """At most one point per this many seconds per group (a whole number of seconds, >= 1)."""

    rollup_resolution: Duration = Field(default=900.0)
    """The long-term tier: one min/max/last rollup per group per this many seconds (a multiple of `resolution`)."""
    rollup_retention: Duration = Field(default=30 * DAY, ge=0)
    """Rollups (and incidents) older than this are dropped; 0 keeps no rollups (the minute points only)."""
    timezone: str = "UTC"
    """The zone in which recurring patterns are found and told ("most nights from 02:00")."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(messages.digest_bad_timezone(name)) from exc
        return name

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @model_validator(mode="after")
    def _rollups_fit(self) -> Self:
        if self.rollup_retention == 0:
            return self
        ratio = self.rollup_resolution / self.resolution
        if self.rollup_resolution < self.resolution or not ratio.is_integer():
            raise ValueError(messages.history_bad_rollup_resolution(self.rollup_resolution, self.resolution))
        if self.rollup_retention < self.retention:
            raise ValueError(messages.history_rollups_shorter(self.rollup_retention, self.retention))
        return self

    @property
    def longest(self) -> float:
        """How far back the history reaches: the rollups' retention, or the points' when there are no rollups."""
        return max(self.retention, self.rollup_retention)

    @field_validator("retention")
    @classmethod
    def _covers_a_day(cls, value: float) -> float:
        if value < DAY:
            raise ValueError(messages.digest_retention_too_short(value))
        return value

    @field_validator("resolution")
    @classmethod
    def _whole_seconds(cls, value: float) -> float:
        if value < 1 or not value.is_integer():
            raise ValueError(messages.digest_bad_resolution(value))
        return value


class DigestConfig(_Strict):
    """One channel's digest: where, when (5-field crontab in `timezone`) and over which period."""

    channel: str
    cron: str = "0 9 * * *"
    timezone: str = "UTC"
    period: Duration = Field(default=DAY, gt=0)
    report: bool = False
    """Post the report of repeat offenders over `period` (e.g. weekly: cron "0 9 * * mon", period 7d) instead of the
    daily digest: per group, incidents, time in trouble, time to resolve, causes, what fixed it, and the month's
    chart (lagbot.slack.history_replies)."""

    @field_validator("channel")
    @classmethod
    def _channel(cls, channel: str) -> str:
        if not channel or any(c.isspace() for c in channel):
            raise ValueError(messages.digest_bad_channel(channel))
        return channel

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, cron: str) -> str:
        from apscheduler.triggers.cron import CronTrigger

        try:
            CronTrigger.from_crontab(cron, timezone="UTC")
        except ValueError as exc:
            raise ValueError(messages.digest_bad_cron(cron, str(exc))) from exc
        return cron

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(messages.digest_bad_timezone(name)) from exc
        return name

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def trigger(self) -> CronTrigger:
        """The APScheduler trigger of this digest (imported here: the CLI does not pay for APScheduler)."""
        from apscheduler.triggers.cron import CronTrigger

        return CronTrigger.from_crontab(self.cron, timezone=self.zone)


class DigestSettings(_Strict):
    """The `digest` section: the history store's limits and the digests to post."""

    history: HistoryConfig = Field(default_factory=HistoryConfig)
    channels: list[DigestConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _periods_within_history(self) -> Self:
        for digest in self.channels:
            kept = self.history.longest if digest.report else self.history.retention  # a report reads the rollups
            if digest.period > kept:
                raise ValueError(messages.digest_period_beyond_history(digest.channel, digest.period, kept))
        return self
