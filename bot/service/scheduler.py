"""When things run: leadership renewal, a check per cluster at its interval, digests on their cron.

APScheduler's BackgroundScheduler runs the jobs in threads; every job is guarded so that one failure is
logged and counted and never stops the schedule. Checks and digests run on every replica's scheduler but
do their work only on the leader (`Bot.check` asks `Leadership`), so a replica that takes over needs no
rescheduling.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from lagbot.service.bot import Bot

log = logging.getLogger(__name__)


def guarded(name: str, work: Callable[..., Any]) -> Callable[..., None]:
    """`work` with every exception logged (with the job's name) instead of escaping into the scheduler."""

    def run(*args: Any) -> None:
        try:
            work(*args)
        except Exception:
            log.exception("job failed", extra={"job": name})

    return run


ExtraJobs = Callable[[BackgroundScheduler], None]


def build_scheduler(bot: Bot, *, extra_jobs: ExtraJobs | None = None) -> BackgroundScheduler:
    """A scheduler with the leadership job and one check job per cluster (not started)."""
    scheduler = BackgroundScheduler(
        timezone=UTC, job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30}
    )
    now = datetime.now(UTC)
    ttl = bot.settings.leader.lease_ttl
    scheduler.add_job(
        guarded("leadership", bot.leadership.tick),
        IntervalTrigger(seconds=ttl / 3),
        id="leadership",
        next_run_time=now,
    )
    scheduler.add_job(
        guarded("outbox", bot.deliver_if_leader),
        IntervalTrigger(seconds=ttl / 3),
        id="outbox",
        next_run_time=now + timedelta(seconds=1),
    )
    for cluster in bot.settings.clusters:
        scheduler.add_job(
            guarded(f"check {cluster.name}", bot.check),
            IntervalTrigger(seconds=cluster.check_interval),
            args=[cluster.name],
            id=f"check:{cluster.name}",
            next_run_time=now + timedelta(seconds=0.5),
        )
    for digest in bot.settings.digest.channels:
        scheduler.add_job(
            guarded(f"digest {digest.channel}", bot.scheduled_digest),
            digest.trigger(),
            args=[digest],
            id=f"digest:{digest.channel}",
        )
    if bot.remediations is not None:
        scheduler.add_job(
            guarded("remediation housekeeping", bot.housekeeping),
            IntervalTrigger(seconds=min(30.0, bot.settings.leader.run_heartbeat)),
            id="remediation-housekeeping",
        )
    if extra_jobs is not None:
        extra_jobs(scheduler)
    return scheduler
