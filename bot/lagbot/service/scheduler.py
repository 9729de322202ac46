"""When things run: leadership renewal, a check per cluster at its interval, digests on their cron.

APScheduler's BackgroundScheduler runs the jobs in threads; every job is guarded so that one failure is
logged and counted and never stops the schedule. Checks and digests run on every replica's scheduler but
do their work only on the leader (`Bot.check` asks `Leadership`), so a replica that takes over needs no
rescheduling.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
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

OUTBOX_JOB = "outbox"


class DeliverSoon:
    """Runs the outbox's delivery on a thread of its own as soon as a check queued work, so that a check never
    waits on Slack: at most one such thread at a time, and a wake-up while it runs makes it look once more
    (nothing queued is left to the periodic outbox job). Never touches the scheduler, whose shutdown waits for
    the check jobs while holding its locks."""

    def __init__(self, bot: Bot) -> None:
        self._deliver = guarded("outbox", bot.deliver_if_leader)
        self._lock = threading.Lock()
        self._running = False
        self._again = False

    def __call__(self) -> None:
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running = True
        threading.Thread(target=self._run, name="lagbot-deliver", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._again = False
            self._deliver()
            with self._lock:
                if not self._again:
                    self._running = False
                    return


def scheduled_check(bot: Bot, deliver_soon: Callable[[], None], cluster: str) -> None:
    """A cluster's scheduled check. Its Slack messages are only queued and sent on the delivery thread, so a slow or
    failing Slack never delays this cluster's next check (nor any other's)."""
    if bot.check(cluster, deliver=False) is not None:
        deliver_soon()


def build_scheduler(bot: Bot, *, extra_jobs: ExtraJobs | None = None) -> BackgroundScheduler:
    """A scheduler with the leadership job and one check job per cluster (not started)."""
    # A worker thread for every job that may run at once: a cluster whose broker hangs holds only its own.
    workers = len(bot.settings.clusters) + len(bot.settings.digest.channels) + 4
    scheduler = BackgroundScheduler(
        timezone=UTC,
        executors={"default": ThreadPoolExecutor(max_workers=workers)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30},
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
        id=OUTBOX_JOB,
        next_run_time=now + timedelta(seconds=1),
    )
    deliver_soon = DeliverSoon(bot)
    for cluster in bot.settings.clusters:
        scheduler.add_job(
            guarded(f"check {cluster.name}", scheduled_check),
            IntervalTrigger(seconds=cluster.check_interval),
            args=[bot, deliver_soon, cluster.name],
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
