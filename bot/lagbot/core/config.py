"""Configuration: one YAML file plus environment overrides, validated once, no I/O beyond reading the file.

Every setting is declared here once, with its default. Environment variables override the file:
`LAGBOT_<FIELD>`, nested with `__` (`LAGBOT_WINDOW__SAMPLES=60`); a list or a mapping is given as JSON
(`LAGBOT_CLUSTERS='[{"name": "prod", "bootstrap_servers": "kafka:9092"}]'`).
A bad file or value raises `ConfigError`, whose message names the source, the field path and the problem.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from lagbot.core import messages
from lagbot.core import patterns as patterns_
from lagbot.core.config_env import EnvValueError, environment_values, merged
from lagbot.core.defaults import ALL_GROUPS, HISTORY_HORIZONS, REQUEST_TIMEOUT, group_matches
from lagbot.core.digest_config import DigestSettings
from lagbot.core.errors import ConfigError as ConfigError  # raised here, and by every command
from lagbot.remediations.drain.settings import DrainSettings
from lagbot.remediations.executors.config import ExecutorsConfig

ENV_PREFIX = "LAGBOT_"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, None: 1.0}


def parse_duration(value: object) -> float:
    """Parse a duration given as seconds (a number) or as text like '90s', '5m', '2h', '1d'.

    Returns:
        The duration in seconds (>= 0).
    """
    if isinstance(value, bool):
        raise ValueError(messages.bad_duration(value))
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(messages.bad_duration(value))
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value.lower())
        if match:
            return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    raise ValueError(messages.bad_duration(value))


Duration = Annotated[float, BeforeValidator(parse_duration)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GroupFilter(_Strict):
    """Which consumer groups of a cluster are watched: include minus exclude (regexes, full match)."""

    include: list[str] = Field(default_factory=lambda: [ALL_GROUPS])
    exclude: list[str] = Field(default_factory=list)

    @field_validator("include", "exclude")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                patterns_.check(pattern)
            except patterns_.UnsafePattern as exc:
                raise ValueError(messages.refused_regex(pattern, exc)) from None
        return patterns

    def matches(self, group: str) -> bool:
        return group_matches(self.include, self.exclude, group)


class ClusterConfig(_Strict):
    """One Kafka cluster. `kafka` is passed to librdkafka as is (SASL, SSL, ...).

    `kafka_env` names, per librdkafka property, the environment variable that holds its value
    (`sasl.password: KAFKA_PASSWORD`): secrets stay out of the file, of these settings and of the logs;
    the variable is read only when a client is made (`client_config`).
    """

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    bootstrap_servers: str = Field(min_length=1)
    kafka: dict[str, str | int | float | bool] = Field(default_factory=dict)
    kafka_env: dict[str, str] = Field(default_factory=dict)
    groups: GroupFilter = Field(default_factory=GroupFilter)
    check_interval: Duration = Field(default=60.0, gt=0)
    request_timeout: Duration = Field(default=REQUEST_TIMEOUT, gt=0)

    @field_validator("kafka")
    @classmethod
    def _no_reserved_keys(cls, props: dict[str, Any]) -> dict[str, Any]:
        if "bootstrap.servers" in props:
            raise ValueError(messages.reserved_kafka_key("bootstrap.servers", "bootstrap_servers"))
        return props

    @field_validator("kafka_env")
    @classmethod
    def _env_names(cls, props: dict[str, str]) -> dict[str, str]:
        for prop, variable in props.items():
            if prop == "bootstrap.servers":
                raise ValueError(messages.reserved_kafka_key("bootstrap.servers", "bootstrap_servers"))
            if not _ENV_NAME.fullmatch(variable):
                raise ValueError(messages.bad_env_name(prop, variable))
        return props

    @model_validator(mode="after")
    def _set_once(self) -> Self:
        both = sorted(self.kafka.keys() & self.kafka_env.keys())
        if both:
            raise ValueError(messages.kafka_property_twice(both))
        return self

    def client_config(self) -> dict[str, Any]:
        """The librdkafka configuration for a client of this cluster, secrets read from the environment.

        Raises:
            ConfigError: a variable named in `kafka_env` is not set (or empty).
        """
        secrets = {}
        for prop, variable in self.kafka_env.items():
            value = os.environ.get(variable)
            if not value:
                raise ConfigError(messages.kafka_env_unset(self.name, prop, variable))
            secrets[prop] = value
        return {**self.kafka, **secrets, "bootstrap.servers": self.bootstrap_servers}


class WindowConfig(_Strict):
    """How much history is kept per partition and group."""

    samples: int = Field(default=30, ge=2, le=10_000)
    ttl: Duration = Field(default=86_400.0, gt=0)
    """Windows of groups that vanish expire after this long (Redis store)."""


class Level(_Strict):
    """One severity level: fires when lag (messages and/or seconds) is over its limits, held for a while.

    `messages` and `seconds` are alternatives: either one over its limit is enough. `growing` also
    requires the group lag to be higher at the end of the sustain period than at its start.
    `doubling_within` fires on its own when the group lag at least doubled within that period and is
    above `doubling_min_lag` (so 10 -> 20 messages is not critical).
    """

    messages: int | None = Field(default=None, ge=0)
    seconds: Duration | None = Field(default=None, ge=0)
    growing: bool = False
    sustained_for: Duration = 0.0
    doubling_within: Duration | None = None
    doubling_min_lag: int = Field(default=50_000, ge=0)

    @model_validator(mode="after")
    def _has_a_trigger(self) -> Self:
        if self.messages is None and self.seconds is None and self.doubling_within is None:
            raise ValueError(messages.level_without_trigger())
        return self


class Thresholds(_Strict):
    """Severity levels; defaults from a real incident (see README)."""

    warn: Level = Level(messages=50_000, growing=True, sustained_for=300.0)
    critical: Level = Level(messages=500_000, doubling_within=600.0)
    page: Level = Level(messages=2_000_000)


class Evaluation(_Strict):
    """Knobs of the behavioural rules."""

    min_samples: int = Field(default=3, ge=2)
    """Samples needed before STALL, STOP or WARN can be judged."""
    min_span: Duration = Field(default=10.0, ge=0)
    """Seconds the window must span before STALL or STOP can be judged (commit intervals are seconds)."""
    quiet_lag: int = Field(default=10, ge=0)
    """WARN needs a partition's newest lag above this many messages (and above `quiet_seconds`)."""
    quiet_seconds: Duration = Field(default=8.0, ge=0)
    """WARN, and causes read from the lag's distribution, need lag more than this many seconds old: more than
    auto-commit's 5 s cadence and its jitter, which a consumer that keeps up shows between its commits."""
    diagnose_min_lag: int = Field(default=1_000, ge=0)
    """Below this total lag (and with status and severity OK) lag-distribution causes are not stated."""
    history_horizons: list[Duration] = Field(default_factory=lambda: list(HISTORY_HORIZONS), max_length=8)
    """Horizons before now over which the broker's time index gives each partition's baseline produce rate (and
    lag in seconds from the first check); one batched ListOffsets request each, asked again only when a horizon
    moved on. Empty: the index is not asked."""
    exact_lag_seconds: int = Field(default=0, ge=0, le=100)
    """Per cycle and cluster, the N partitions furthest behind get an exact lag in seconds: the timestamp of their
    first unconsumed record, read by one short-lived consumer (assign at the committed offsets, no group join, no
    commit). Needs READ on those topics. 0: off (lag in seconds comes from the time index and the window)."""
    exact_lag_timeout: Duration = Field(default=2.0, gt=0, le=30)
    """Seconds the exact read may take per cycle; partitions not read by then keep their estimate."""

    @field_validator("history_horizons")
    @classmethod
    def _positive_horizons(cls, horizons: list[float]) -> list[float]:
        if any(h <= 0 for h in horizons):
            raise ValueError(messages.horizons_positive(horizons))
        return horizons


class Route(_Strict):
    """Where a group's incidents go: the first route whose cluster and group regexes match (full match)."""

    channel: str = Field(min_length=1)
    cluster: str = ".*"
    group: str = ".*"

    @field_validator("cluster", "group")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            return patterns_.check(pattern)
        except patterns_.UnsafePattern as exc:
            raise ValueError(messages.refused_regex(pattern, exc)) from None

    def matches(self, cluster: str, group: str) -> bool:
        return patterns_.fullmatch(self.cluster, cluster) and patterns_.fullmatch(self.group, group)


class CommandLimits(_Strict):
    """How many `/lag` commands one user, and one channel, may send per `every` (kept in Redis, shared by
    the replicas), and how many on-demand digests one target gets per `digest_every`."""

    per_user: int = Field(default=20, ge=1)
    per_channel: int = Field(default=60, ge=1)
    every: Duration = Field(default=60.0, gt=0)
    digests: int = Field(default=2, ge=1)
    digest_every: Duration = Field(default=600.0, gt=0)


class SlackConfig(_Strict):
    """The Slack side. Tokens and the signing secret come from the environment (named here), never the file.

    Socket Mode is used when the app token's variable is set, HTTP mode (`/slack/events`) otherwise.
    """

    api_url: str = Field(default="https://slack.com/api/", pattern=r"^https?://")
    """Slack's Web API base URL; point it at an emulator or a staging proxy (slack_sdk's base_url)."""
    default_channel: str | None = None
    routes: list[Route] = Field(default_factory=list)
    bot_token_env: str = "SLACK_BOT_TOKEN"
    app_token_env: str = "SLACK_APP_TOKEN"
    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    command_limits: CommandLimits = Field(default_factory=CommandLimits)

    @field_validator("api_url")
    @classmethod
    def _trailing_slash(cls, url: str) -> str:
        return url if url.endswith("/") else url + "/"

    def channel_for(self, cluster: str, group: str) -> str | None:
        """The channel of the first matching route, else the default channel (None: not posted)."""
        for route in self.routes:
            if route.matches(cluster, group):
                return route.channel
        return self.default_channel


class StormConfig(_Strict):
    """A storm: more than `threshold` new incidents in one channel within `window`.

    Past it, the channel's new incidents are not posted one thread each: one summary thread says how many, the
    worst groups first and how to narrow the watch, and is edited at most once per `update_every`
    (docs/bot.md "Incident storms").
    """

    threshold: int = Field(default=10, ge=1, le=10_000)
    """New incidents one channel may get within `window` before the next ones are folded into a summary."""
    window: Duration = Field(default=300.0, gt=0, le=86_400)
    """The sliding window the new incidents are counted in; the storm ends once a window holds `threshold` or
    fewer."""
    update_every: Duration = Field(default=30.0, ge=1, le=3_600)
    """The summary is edited at most this often (and once more when the storm ends)."""
    worst: int = Field(default=10, ge=1, le=40)
    """Groups the summary lists by name, worst first."""


class IncidentConfig(_Strict):
    """When an incident opens and closes. Severity opens it; hysteresis closes it."""

    open_at: Literal["warn", "critical", "page"] = "warn"
    resolve_after: Duration = Field(default=600.0, ge=0)
    """Lag must stay below the opening severity this long before the incident resolves."""
    reopen_within: Duration = Field(default=1800.0, ge=0)
    """A group back in trouble this soon after resolving reopens the same thread instead of a new one."""
    storm: StormConfig = Field(default_factory=StormConfig)
    """When a channel's new incidents are folded into one summary thread."""
    refresh_every: Duration = Field(default=300.0, ge=10, le=86_400)
    """A root whose only change is its counters (open for, lag figures) is edited at most this often; a change of
    story is edited at once, an identical root never (docs/bot.md)."""


class HttpConfig(_Strict):
    """The bot's HTTP server: /slack/events (HTTP mode), /healthz, /metrics."""

    host: str = "127.0.0.1"
    port: int = Field(default=3000, ge=0, le=65535)
    health_port: int | None = Field(default=None, ge=0, le=65535)
    """A listener of its own for /livez, /healthz and /metrics (also served on `port`): probes never wait behind
    Slack's requests or connections held open on `port`."""
    max_connections_per_client: int = Field(default=64, ge=1)
    """Requests one client address may have answered at once (and never on every thread of the server); beyond, 429.
    Connections per client are capped at the ingress (docs/security.md)."""
    outbox_stalled_after: Duration = Field(default=300.0, gt=0)
    """/healthz reports unhealthy when queued Slack messages have not moved for this long."""


class LeaderConfig(_Strict):
    """Leadership among bot replicas: only the lease holder runs checks and digests."""

    lease_ttl: Duration = Field(default=30.0, gt=0)
    run_heartbeat: Duration = Field(default=10.0, gt=0)
    """A running remediation beats this often; silent for three beats, the leader finishes it as interrupted."""


class Settings(BaseModel):
    """The whole configuration of lagbot (the environment is read by `build_settings`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    clusters: list[ClusterConfig] = Field(min_length=1)
    window: WindowConfig = Field(default_factory=WindowConfig)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    evaluation: Evaluation = Field(default_factory=Evaluation)
    redis_url: str | None = None
    slack: SlackConfig = Field(default_factory=SlackConfig)
    incidents: IncidentConfig = Field(default_factory=IncidentConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    leader: LeaderConfig = Field(default_factory=LeaderConfig)
    policy_file: Path | None = None
    """Who may approve what (policies/); None: the conservative policy shipped with lagbot."""

    digest: DigestSettings = Field(default_factory=DigestSettings)

    executors: ExecutorsConfig = Field(default_factory=ExecutorsConfig)

    drain: DrainSettings = Field(default_factory=DrainSettings)

    @field_validator("clusters")
    @classmethod
    def _unique_names(cls, clusters: list[ClusterConfig]) -> list[ClusterConfig]:
        names = [c.name for c in clusters]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(messages.duplicate_clusters(duplicates))
        return clusters

    def cluster(self, name: str) -> ClusterConfig:
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise ConfigError(messages.unknown_cluster(name, [c.name for c in self.clusters]))


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a YAML mapping from `path`, or raise ConfigError naming the file and the problem."""
    import yaml  # here: settings given without a file (`lagbot check --bootstrap`) never load the YAML parser

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(messages.config_unreadable(path, exc.strerror or str(exc))) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(messages.config_not_utf8(path, exc.object[exc.start], exc.start)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(messages.config_not_yaml(path, str(problem), where)) from exc
    except (ValueError, OverflowError, RecursionError) as exc:  # a value YAML parses but Python cannot hold
        raise ConfigError(messages.config_not_yaml(path, str(exc) or type(exc).__name__, None)) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(messages.config_not_mapping(path, type(data).__name__))
    for key in data:
        if not isinstance(key, str):
            raise ConfigError(messages.config_key_not_text(path, key))
    return data


def build_settings(data: dict[str, Any], *, source: str) -> Settings:
    """Validate `data` with the environment's `LAGBOT_*` variables over it (lagbot.core.config_env) into Settings.

    Raises:
        ConfigError: naming `source` (or the environment variable), the field path and the problem.
    """
    try:
        values = merged(data, environment_values(Settings, ENV_PREFIX, os.environ))
    except EnvValueError as exc:  # a list or mapping that is not JSON
        raise ConfigError(str(exc)) from None
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source=source)) from None


def load_settings(path: Path | None, *, defaults: dict[str, Any] | None = None) -> Settings:
    """Load settings from a YAML file (if given) over `defaults`, with environment overrides."""
    data: dict[str, Any] = dict(defaults or {})
    source = "defaults"
    if path is not None:
        data.update(read_yaml(path))
        source = str(path)
    return build_settings(data, source=source)


def format_validation_error(exc: ValidationError, *, source: str) -> str:
    """One line per problem: `<source>: <field.path>: <problem>` (the env var's name when it came from there)."""
    lines = []
    for error in exc.errors(include_url=False):
        path = ".".join(str(part) for part in error["loc"]) or "(top level)"
        origin = _env_origin(error["loc"]) or source
        problem = error["msg"].removeprefix("Value error, ")
        lines.append(messages.config_field_error(origin, path, problem, error.get("input")))
    return "\n".join(lines)


def _env_origin(loc: tuple[int | str, ...]) -> str | None:
    """The environment variable that set this field (or one of its parents), if any.

    Matched case-insensitively, as they are read (lagbot.core.config_env), and named as it is set.
    """
    names = {name.upper(): name for name in os.environ}
    for depth in range(len(loc), 0, -1):
        wanted = ENV_PREFIX + "__".join(str(part) for part in loc[:depth]).upper()
        if wanted in names:
            return f"environment variable {names[wanted]}"
    return None
