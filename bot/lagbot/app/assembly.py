"""How the bot is assembled: `assemble` builds every part from the settings and the environment, each given what it
needs at construction, and returns them (`Parts`) with their `Lifecycle`: the long-lived ones in dependency order.

Built in this order: the secrets, Redis (must answer), the Slack client, the policy, the bot on its Redis stores
(its remediation side and weekly report composer built with it), the `/lag` commands behind their guard, the bolt app
(asks Slack who the token is), the HTTP server, the scheduler, and Socket Mode when an app token is set.
Started in this order: the HTTP server (/slack/events in HTTP mode, /healthz, /metrics: up before anything can be
asked of it), the leadership, the scheduler (its jobs tick the leadership and run the checks), then Socket Mode
(commands arrive last, once everything they use runs). Stopped in reverse: Socket Mode first (no new commands), the
scheduler (waits for the running checks), the leadership (resigns, so another replica takes over at once), and the
HTTP server last (/healthz answers to the end).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis
from apscheduler.schedulers.background import BackgroundScheduler
from slack_bolt.error import BoltError
from slack_sdk.errors import SlackApiError

from lagbot.app import wording
from lagbot.app.lifecycle import Lifecycle, Part
from lagbot.app.server import BotHTTPServer
from lagbot.core import messages
from lagbot.core.config import ConfigError, Settings
from lagbot.core.digest_config import DigestConfig
from lagbot.policies.approvers import ApproverDirectory, RedisUsergroupCache
from lagbot.policies.loader import default_policy_path, load_policy
from lagbot.policies.model import Policy
from lagbot.remediations.executors.base import Executor, Workload
from lagbot.remediations.executors.config import build_executor
from lagbot.service.bot import Bot
from lagbot.service.cluster_health import clusters_health
from lagbot.service.digest import ComposedDigest
from lagbot.service.remediate import Remediator
from lagbot.service.scheduler import build_scheduler
from lagbot.service.silences import RedisSilenceStore
from lagbot.service.slack_api import slack_client
from lagbot.service.stores import redis_stores
from lagbot.slack.app import ClickLimit, build_app
from lagbot.slack.guard import CommandGuard, RateLimiter
from lagbot.slack.history_replies import compose_report
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.replay import ReplayGuard, refuse_replays
from lagbot.slack.wiring import BotCommands

if TYPE_CHECKING:
    from slack_bolt import App
    from slack_bolt.adapter.socket_mode import SocketModeHandler
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


def build_guard(bot: Bot, client: redis.Redis, policy: Policy, directory: ApproverDirectory) -> CommandGuard:
    """Ids, rate limits (counted in `client`'s Redis) and the policy's word for every `/lag` command; digests where
    configured."""
    settings = bot.settings
    digest_channels = {d.channel for d in settings.digest.channels}
    if settings.slack.default_channel:
        digest_channels.add(settings.slack.default_channel)
    return CommandGuard(
        client=client,
        policy=policy,
        directory=directory,
        audit=bot.audit,
        limits=settings.slack.command_limits,
        digest_channels=digest_channels,
    )


def click_limit(bot: Bot) -> ClickLimit:
    """Approve and deny clicks count against the user's command limit, in a scope of their own."""
    limiter, limits = RateLimiter(bot.redis), bot.settings.slack.command_limits
    return lambda user, now: limiter.hit("click", user, most=limits.per_user, every=limits.every, now=now)


def remediator_of(settings: Settings, directory: ApproverDirectory) -> Callable[[Bot], Remediator]:
    """What builds the bot's remediation side from the bot (`Bot(remediations=...)`): on the bot's remediation stores
    (lagbot.service.remediation_stores), the approvers of `directory` and one executor per kind, built on first
    use."""
    executors: dict[str, Executor] = {}

    def executor_for(workload: Workload) -> Executor:
        if workload.executor not in executors:
            executors[workload.executor] = build_executor(workload.executor, settings.executors)
        return executors[workload.executor]

    def build(bot: Bot) -> Remediator:
        return Remediator(bot, directory=directory, executor_for=executor_for)

    return build


def report_of(bot: Bot, config: DigestConfig, now: float) -> ComposedDigest:
    """The weekly report a `report: true` digest posts (`Bot(report_composer=...)`)."""
    return compose_report(bot, config, now=now)


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


@dataclass(frozen=True)
class Parts:
    """Every part of one running bot, and the lifecycle of its long-lived ones."""

    bot: Bot
    remediator: Remediator
    commands: BotCommands
    app: App
    server: BotHTTPServer
    scheduler: BackgroundScheduler
    socket_mode: SocketModeHandler | None
    lifecycle: Lifecycle


def assemble(settings: Settings, environ: Mapping[str, str]) -> Parts:
    """Build every part of the bot, each with what it needs; nothing is started (`Parts.lifecycle` does).

    Raises:
        ConfigError: a secret is missing, Redis does not answer, or Slack refused the bot token.
        SlackUnreachable: Slack's Web API did not answer.
    """
    secrets = Secrets(settings, environ)
    client = connect_redis(settings)
    slack = slack_client(secrets.bot_token, settings.slack.api_url)
    silences = RedisSilenceStore(client)
    policy = load_policy(settings.policy_file or default_policy_path())
    directory = ApproverDirectory(slack, cache=RedisUsergroupCache(client))
    bot = Bot(
        settings,
        redis_stores(settings, client),
        slack,
        SlackPresenter(),
        policy=policy,
        silenced=lambda now: {(s.cluster, s.group) for s in silences.all_active(now)},
        remediations=remediator_of(settings, directory),
        report_composer=report_of,
    )
    assert isinstance(bot.remediations, Remediator)  # built by remediator_of
    remediator = bot.remediations
    guard = build_guard(bot, client, policy, directory)
    commands = BotCommands(bot, silences, remediator=remediator, guard=guard)
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
    )
    scheduler = build_scheduler(bot)
    socket_mode = socket_mode_of(app, secrets.app_token)
    lifecycle = Lifecycle(long_lived(server, bot, scheduler, socket_mode))
    return Parts(bot, remediator, commands, app, server, scheduler, socket_mode, lifecycle)


def socket_mode_of(app: App, app_token: str) -> SocketModeHandler | None:
    """Socket Mode's connection to Slack when an app token is set (not connected yet); None in HTTP mode."""
    if not app_token:
        return None
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    return SocketModeHandler(app, app_token)


def long_lived(
    server: BotHTTPServer, bot: Bot, scheduler: BackgroundScheduler, socket_mode: SocketModeHandler | None
) -> list[Part]:
    """The long-lived parts in the order they start (the module's doc says why); they stop in reverse."""
    parts = [
        Part("http server", server.start, server.stop),
        Part("leadership", bot.leadership.start, bot.leadership.stop),
        Part("scheduler", scheduler.start, lambda: scheduler.shutdown(wait=True)),
    ]
    if socket_mode is not None:
        parts.append(Part("socket mode", socket_mode.connect, socket_mode.close))
    return parts
