"""`lagbot run`: assemble the bot from settings and the environment, run until SIGTERM or SIGINT.

Order of start: Redis (must answer), the Slack client, the bot, the bolt app, the HTTP server
(/slack/events in HTTP mode, /healthz, /metrics), the scheduler, then Socket Mode if an app token is
set. Stop is the reverse, and resigns leadership so another replica takes over at once.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import redis
from slack_bolt.error import BoltError
from slack_sdk.errors import SlackApiError

from lagbot.app import wording
from lagbot.app.server import BotHTTPServer
from lagbot.core import messages
from lagbot.core.config import ConfigError, Settings
from lagbot.core.digest_config import DigestConfig
from lagbot.engine.check import tune_gc
from lagbot.policies.approvers import ApproverDirectory, RedisUsergroupCache
from lagbot.policies.loader import default_policy_path, load_policy
from lagbot.remediations.executors.base import Executor, Workload
from lagbot.remediations.executors.config import build_executor
from lagbot.service.approvals import ProposalStore
from lagbot.service.bot import Bot, slack_client
from lagbot.service.cluster_health import clusters_health
from lagbot.service.remediate import Remediator
from lagbot.service.scheduler import build_scheduler
from lagbot.service.silences import RedisSilenceStore
from lagbot.service.stores import redis_stores
from lagbot.slack.app import ClickLimit, build_app
from lagbot.slack.guard import CommandGuard, RateLimiter
from lagbot.slack.history_replies import compose_report
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.replay import ReplayGuard, refuse_replays
from lagbot.slack.replies import audit_reply, remediate_reply
from lagbot.slack.wiring import BotCommands

if TYPE_CHECKING:
    from slack_bolt import App
    from slack_sdk import WebClient

log = logging.getLogger(__name__)


class Secrets:
    """Tokens and the signing secret, read from the environment variables the config names."""

    def __init__(self, settings: Settings, environ: Mapping[str, str]) -> None:
        slack = settings.slack
        self.bot_token = environ.get(slack.bot_token_env, "")
        self.app_token = environ.get(slack.app_token_env, "")
        self.signing_secret = environ.get(slack.signing_secret_env, "")
        if not self.bot_token:
            raise ConfigError(messages.missing_secret(slack.bot_token_env, "the bot token (xoxb-...)"))
        if not self.app_token and not self.signing_secret:
            raise ConfigError(wording.no_slack_mode(slack.app_token_env, slack.signing_secret_env))


class SlackUnreachable(Exception):
    """Slack's Web API could not be reached at start (`lagbot run` exits 3); the message says what to check."""


def slack_problem(exc: BaseException) -> str | None:
    """Why Slack could not be reached, when `exc` (raised by the first Web API call) is a network failure; None
    otherwise."""
    from urllib.error import URLError

    if isinstance(exc, URLError):
        return str(exc.reason)
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return None


def refused_token(exc: BoltError) -> str:
    """Slack's error code (invalid_auth, token_revoked...) behind bolt's failed auth.test at start."""
    cause = exc.__context__
    if isinstance(cause, SlackApiError):
        return str(cause.response.get("error") or cause)
    return str(exc)


def connect_redis(settings: Settings) -> redis.Redis:
    if not settings.redis_url:
        raise ConfigError(messages.bot_needs_redis())
    try:
        client = redis.Redis.from_url(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)
        client.ping()
    except (redis.RedisError, ValueError) as exc:
        raise ConfigError(messages.redis_unreachable(settings.redis_url, str(exc))) from None
    return client


def build_guard(bot: Bot, directory: ApproverDirectory) -> CommandGuard:
    """Ids, rate limits and the policy's word for every `/lag` command; digests where configured."""
    settings = bot.settings
    digest_channels = {d.channel for d in settings.digest.channels}
    if settings.slack.default_channel:
        digest_channels.add(settings.slack.default_channel)
    assert bot.policy is not None
    return CommandGuard(
        client=bot.redis,
        policy=bot.policy,
        directory=directory,
        audit=bot.audit,
        limits=settings.slack.command_limits,
        digest_channels=digest_channels,
    )


def click_limit(bot: Bot) -> ClickLimit:
    """Approve and deny clicks count against the user's command limit, in a scope of their own."""
    limiter, limits = RateLimiter(bot.redis), bot.settings.slack.command_limits
    return lambda user, now: limiter.hit("click", user, most=limits.per_user, every=limits.every, now=now)


def build_remediator(bot: Bot) -> Remediator:
    """Proposals, approvers (user groups cached in Redis) and one executor per kind, built on first use."""
    executors: dict[str, Executor] = {}

    def executor_for(workload: Workload) -> Executor:
        if workload.executor not in executors:
            executors[workload.executor] = build_executor(workload.executor, bot.settings.executors)
        return executors[workload.executor]

    directory = ApproverDirectory(bot.slack, cache=RedisUsergroupCache(bot.redis))
    return Remediator(bot, proposals=ProposalStore(bot.redis), directory=directory, executor_for=executor_for)


def digest_config_for(settings: Settings, channel: str) -> DigestConfig:
    """The configured digest of `channel`, else a default one (what `/lag digest` posts there)."""
    return next((d for d in settings.digest.channels if d.channel == channel), DigestConfig(channel=channel))


def health(bot: Bot) -> tuple[bool, dict[str, Any]]:
    """Healthy when Redis answers and the outbox moves (queued Slack messages not stuck for too long)."""
    try:
        bot.redis.ping()
        redis_ok = True
        stalled_for = bot.outbox.stalled_for(now=bot.clock())
        pending = bot.outbox.pending()
    except redis.RedisError:
        redis_ok, stalled_for, pending = False, 0.0, 0
    stalled = stalled_for > bot.settings.http.outbox_stalled_after
    latest = {name: report.taken_at for name, report in bot.latest.items()}
    return redis_ok and not stalled, {
        "ok": redis_ok and not stalled,
        "replica": bot.replica_id,
        "leader": bot.leadership.is_leader(),
        "checks": latest,
        "clusters": clusters_health(bot.latest, bot.away_since, bot.failing),
        "checks_failing": sorted(bot.failing),
        "outbox": {"pending": pending, "stalled": stalled, "stalled_for": round(stalled_for, 1)},
    }


def start_app(
    settings: Settings, slack: WebClient, secrets: Secrets, commands: BotCommands, remediator: Remediator, bot: Bot
) -> App:
    """The bolt app, whose start asks Slack who the token is (auth.test): a refused token is a ConfigError (exit 4),
    an unreachable Slack is `SlackUnreachable` (exit 3), each one line naming Slack and what to check.

    Raises:
        ConfigError: Slack refused the bot token.
        SlackUnreachable: Slack's Web API did not answer.
    """
    client_log = logging.getLogger("slack_sdk.web.base_client")
    client_log.addFilter(_failed_attempt)  # each failed attempt is logged; the one line below says it once
    try:
        return build_app(
            client=slack,
            signing_secret=secrets.signing_secret or "socket-mode",
            run_command=commands.run,
            clicks=remediator,
            clock=bot.clock,
            click_limit=click_limit(bot),
        )
    except BoltError as exc:
        raise ConfigError(wording.slack_refused_token(settings.slack.bot_token_env, refused_token(exc))) from None
    except Exception as exc:
        problem = slack_problem(exc)
        if problem is None:
            raise
        raise SlackUnreachable(wording.slack_unreachable(settings.slack.api_url, problem)) from None
    finally:
        client_log.removeFilter(_failed_attempt)


def _failed_attempt(record: logging.LogRecord) -> bool:
    """Drop slack_sdk's line for a request that could not be sent (while the bot starts: `start_app` reports it)."""
    return not record.getMessage().startswith("Failed to send a request to Slack API server")


def run_bot(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run the bot until `stop` is set (or SIGTERM/SIGINT). Returns the exit code."""
    tune_gc()  # a long-running process that keeps every check window: see tune_gc
    done = stop or threading.Event()
    if stop is None:  # from the start: a SIGTERM while starting stops the bot cleanly once it has started
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: done.set())
    secrets = Secrets(settings, os.environ if environ is None else environ)
    client = connect_redis(settings)
    slack = slack_client(secrets.bot_token, settings.slack.api_url)
    silences = RedisSilenceStore(client)
    policy = load_policy(settings.policy_file or default_policy_path())
    bot = Bot(
        settings,
        redis_stores(settings, client),
        slack,
        SlackPresenter(),
        policy=policy,
        silenced=lambda now: {(s.cluster, s.group) for s in silences.all_active(now)},
    )
    commands = BotCommands(bot, silences)
    commands.digest = lambda channel: bot.digest(digest_config_for(settings, channel))
    remediator = build_remediator(bot)
    bot.remediations = remediator
    bot.report_composer = lambda config, now: compose_report(bot, config, now=now)  # `report: true` digests
    commands.guard = build_guard(bot, remediator.directory)
    commands.audit_reply = lambda cluster, group: audit_reply(bot, cluster, group)
    commands.remediate_reply = lambda cluster, group, action, user, args: remediate_reply(
        remediator, commands.check_group(cluster, group), action, user, args, now=bot.clock()
    )
    app = start_app(settings, slack, secrets, commands, remediator, bot)
    refuse_replays(app, ReplayGuard(client))
    server = BotHTTPServer(
        host=settings.http.host,
        port=settings.http.port,
        app=None if secrets.app_token else app,
        health=lambda: health(bot),
        metrics=bot.metrics.render,
        signing_secret=None if secrets.app_token else secrets.signing_secret,
        health_port=settings.http.health_port,
        max_per_client=settings.http.max_connections_per_client,
    ).start()
    log.warning("lagbot listening", extra={"host": settings.http.host, "port": server.port, "replica": bot.replica_id})
    scheduler = build_scheduler(bot)
    scheduler.start()
    socket_mode = None
    if secrets.app_token:
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        socket_mode = SocketModeHandler(app, secrets.app_token)
        socket_mode.connect()  # type: ignore[no-untyped-call]
    done.wait()
    if socket_mode is not None:
        socket_mode.close()  # type: ignore[no-untyped-call]
    scheduler.shutdown(wait=True)
    bot.leadership.resign()
    server.stop()
    return 0
