"""`lagbot demo`: the Slack bot itself, end to end, on embedded defaults (nothing to configure, no network).

What runs, all on 127.0.0.1, all stopped at the end, on Ctrl-C and on any failure:
- Apache Kafka when this checkout fetched it (`make kafka-fetch`), else the embedded broker (Tansu);
  a redis-server and the Slack Web API emulator;
- a local consumer fleet (lagbot.devkit.fleet) of one slow member on a 4-partition topic, and
  a bounded producer that writes faster than that member reads;
- `lagbot run` as a child process configured as in production: the emulator's URL as Slack's API, a
  policy naming an approver and the fleet as the group's workload, its secrets in its environment.

Then, as people in the channel would see it: the bot opens one incident (root message, a thread with the
per-partition table and the causes) and offers to scale; the demo clicks the button as the approver,
through the emulator, signed as Slack signs it; the fleet scales, the lag drains, verification reports,
the incident resolves. The channel is printed as it changes, then a summary read back from Redis (the
incident, the audit trail) and from the broker (committed == log end on every partition).

Every wait has a deadline inside the overall `timeout`; a failure is one line naming what did not happen.
"""

from __future__ import annotations

import gc
import secrets
import shutil
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

import redis
import yaml
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from lagbot.core import keys, messages
from lagbot.devkit import wording
from lagbot.devkit.apache_kafka import broker_version, demo_broker
from lagbot.devkit.embedded import (
    BotProcess,
    EmbeddedError,
    EmbeddedRedis,
    committed_offsets,
    exact_producer,
    log_end_offsets,
)
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.devkit.fleet import FleetSpec, LocalExecutor
from lagbot.devkit.interrupts import Interrupted, Interrupts
from lagbot.devkit.transcript import ChannelEvent, ChannelWatcher, plain, table_lines
from lagbot.engine.collector import ClusterAdmin
from lagbot.remediations.executors.base import ExecutorError
from lagbot.remediations.executors.config import LocalConfig
from lagbot.service.audit import AuditEntry, AuditLog
from lagbot.service.incidents import Incident, RedisIncidentStore
from lagbot.service.outbox_stores import RedisOutbox

T = TypeVar("T")

TOKEN = "xoxb-lagbot-demo"
CHANNEL = "C0LAGDEMO"
APPROVER = "U0ONCALL"
CLUSTER = "embedded"
TOPIC = "orders"
GROUP = "orders-consumer"
FLEET = "orders-workers"
EXIT_FAILED, EXIT_INTERRUPTED = 1, 130


@dataclass(frozen=True)
class Scenario:
    """The demo's numbers. One member at `delay_ms` a message reads at most 1000 / delay_ms msg/s, well below
    `per_second`; four members (one per partition) read faster than it, so scaling drains the lag."""

    partitions: int = 4
    per_second: int = 100
    limit: int = 12_000
    """The producer's bound in messages (also bounded by time)."""
    delay_ms: float = 30.0
    max_replicas: int = 4
    check_interval: float = 2.0
    warn_messages: int = 300
    resolve_after: float = 14.0
    """Longer than `keep_writing`: the incident resolves only after the producer stopped and the lag drained
    (measured: with 4 s it resolved while the producer still wrote, "lag now 137")."""
    keep_writing: float = 10.0
    """Seconds the producer keeps writing once the scale is done: the lag drains under load."""


class DemoFailed(Exception):
    """The demo could not show what it promises; the message says what did not happen (one line)."""


# ---------------------------------------------------------------------------------------------------
# What the bot is given: its configuration and its policy, as files a user would write
# ---------------------------------------------------------------------------------------------------


def bot_config(
    scenario: Scenario, *, bootstrap: str, redis_url: str, api_url: str, policy: Path, fleets: Path
) -> dict[str, Any]:
    """The bot's YAML configuration (as a mapping): the demo's cluster, thresholds scaled to its numbers."""
    return {
        "clusters": [
            {
                "name": CLUSTER,
                "bootstrap_servers": bootstrap,
                "groups": {"include": [GROUP]},
                "check_interval": f"{scenario.check_interval:g}s",
                "request_timeout": "5s",
            }
        ],
        "thresholds": {
            "warn": {"messages": scenario.warn_messages},
            "critical": {"messages": 100_000},
            "page": {"messages": 1_000_000},
        },
        "evaluation": {"min_samples": 2, "min_span": f"{scenario.check_interval:g}s", "diagnose_min_lag": 50},
        "redis_url": redis_url,
        "slack": {"api_url": api_url, "default_channel": CHANNEL},
        "incidents": {"resolve_after": f"{scenario.resolve_after:g}s", "reopen_within": "1h"},
        "leader": {"lease_ttl": "3s"},
        "policy_file": str(policy),
        "executors": {"local": {"state_dir": str(fleets)}},
    }


def demo_policy(scenario: Scenario) -> dict[str, Any]:
    """One rule: APPROVER may approve scaling the fleet (one approval); nothing else is offered."""
    return {
        "version": 1,
        "default": {
            "name": "demo-team",
            "approvers": {"users": [APPROVER]},
            "workload": {"executor": "local", "name": FLEET},
            "remediations": {
                "scale": {
                    "min_replicas": 1,
                    "max_replicas": scenario.max_replicas,
                    "proposal_expiry": "10m",
                    "cooldown": "10m",
                }
            },
            # Adding members pauses consumption for a rebalance (a few seconds here), so lag rises for a few
            # checks after a scale: at a 2 s check interval that is 4 checks to settle.
            "verification": {"no_change_after": 8, "settle_checks": 4},
        },
    }


# ---------------------------------------------------------------------------------------------------
# The load
# ---------------------------------------------------------------------------------------------------


class BoundedProducer:
    """Writes round-robin over the topic's partitions at `per_second`, one message per batch (exact log
    ends on the embedded broker), until stopped, `limit` messages, or `max_seconds`."""

    def __init__(self, bootstrap: str, scenario: Scenario, *, max_seconds: float) -> None:
        self._bootstrap = bootstrap
        self._scenario = scenario
        self._max_seconds = max_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-producer", daemon=True)
        self.written = 0
        self.error: str | None = None

    def start(self) -> BoundedProducer:
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop writing, wait for the acknowledgements (bounded); returns how many messages were written."""
        self._stop.set()
        self._thread.join(timeout=30)
        return self.written

    def _run(self) -> None:
        producer = exact_producer(self._bootstrap)
        per_tick = max(1, self._scenario.per_second // 10)
        until = time.monotonic() + self._max_seconds
        try:
            while not self._stop.is_set() and self.written < self._scenario.limit and time.monotonic() < until:
                tick = time.monotonic()
                for _ in range(min(per_tick, self._scenario.limit - self.written)):
                    producer.produce(TOPIC, value=b"order", partition=self.written % self._scenario.partitions)
                    producer.poll(0)
                    self.written += 1
                self._stop.wait(max(0.0, 0.1 - (time.monotonic() - tick)))
            left = producer.flush(15)
            if left:
                self.error = f"{left} messages not acknowledged within 15 s"
        except (KafkaException, BufferError) as exc:
            self.error = str(exc)


# ---------------------------------------------------------------------------------------------------
# Printing and waiting
# ---------------------------------------------------------------------------------------------------


class Offsets:
    """The demo's topic and group as the broker reports them, through one admin client that `close()` drops
    (before the broker stops, so librdkafka does not report the broker's departure)."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        self._admin: AdminClient | None = ClusterAdmin({"bootstrap.servers": bootstrap})
        self.partitions = partitions

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            raise DemoFailed("the admin client is closed")
        return self._admin

    def create_topic(self) -> None:
        for future in self.admin.create_topics([NewTopic(TOPIC, self.partitions, 1)]).values():
            future.result(15)

    def committed(self) -> list[int]:
        return committed_offsets(self.admin, GROUP, TOPIC, self.partitions)

    def log_end(self) -> list[int]:
        return log_end_offsets(self.admin, TOPIC, self.partitions)

    def close(self) -> None:
        if isinstance(self._admin, ClusterAdmin):
            self._admin.offsets.close()
        self._admin = None
        gc.collect()  # the client's futures may hold it in a reference cycle


def clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def event_lines(event: ChannelEvent) -> list[str]:
    """A channel event as the transcript prints it: a header, then the message indented."""
    return [wording.demo_event(clock(event.at), event.kind), *(f"           {line}" for line in event.lines)]


class Run:
    """One demo run: where it prints, its overall deadline, and the things a wait must keep an eye on."""

    def __init__(self, out: TextIO, deadline: float) -> None:
        self.out = out
        self.deadline = deadline
        self.watcher: ChannelWatcher | None = None
        self.bot: BotProcess | None = None
        self.producer: BoundedProducer | None = None
        self.interrupts = Interrupts()

    def say(self, line: str = "") -> None:
        print(line, file=self.out, flush=True)

    def show_channel(self) -> None:
        if self.watcher is None:
            return
        for event in self.watcher.poll(time.time()):
            for line in event_lines(event):
                self.say(line)

    def until(self, what: str, probe: Callable[[], T | None], timeout: float) -> T:
        """Poll `probe` (printing the channel meanwhile) until it returns something truthy.

        Raises:
            DemoFailed: `timeout` (or the overall deadline) passed, the bot exited, or the producer failed.
        """
        started = time.monotonic()
        limit = min(started + timeout, self.deadline)
        while True:
            self.show_channel()
            if self.bot is not None and not self.bot.running:
                raise DemoFailed(wording.demo_bot_exited(self.bot.process.returncode, str(self.bot.log_path)))
            if self.producer is not None and self.producer.error:
                raise DemoFailed(wording.demo_producer_failed(self.producer.error))
            value = probe()
            if value:
                return value
            if time.monotonic() >= limit:
                raise DemoFailed(wording.demo_timed_out(what, time.monotonic() - started))
            time.sleep(0.2)


# ---------------------------------------------------------------------------------------------------
# The scenario
# ---------------------------------------------------------------------------------------------------


def approve_buttons(message: Message) -> list[dict[str, Any]]:
    return [
        element
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if str(element.get("action_id", "")).startswith("approve:")
    ]


def find_scale_button(slack: SlackEmulator) -> tuple[Message, Message] | None:
    """(root, reply) of the first thread reply offering an approve button, else None."""
    for root in slack.channel(CHANNEL):
        for reply in slack.thread(CHANNEL, root.ts):
            if approve_buttons(reply):
                return root, reply
    return None


def outcome_of(audit: AuditLog, proposal: str) -> AuditEntry | None:
    entries = audit.latest(CLUSTER, GROUP, 100)
    return next((e for e in entries if e.proposal == proposal and e.event in ("succeeded", "failed")), None)


def resolved_in_channel(slack: SlackEmulator, store: RedisIncidentStore, outbox: RedisOutbox) -> Incident | None:
    """The incident, once Redis has it resolved, its root message says so and nothing waits to be sent."""
    incident = store.get(CLUSTER, GROUP)
    if incident is None or incident.is_open or incident.resolved_at is None:
        return None
    wanted = messages.incident_resolved_fallback(
        GROUP, CLUSTER, incident.resolved_at - incident.opened_at, incident.peak_lag
    )
    roots = slack.channel(CHANNEL)
    if not any(root.text == wanted for root in roots) or outbox.pending():
        return None
    return incident


def metrics_lines(url: str) -> list[str]:
    """The group's lag lines and the cycle count from the bot's /metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
        text = response.read().decode()
    wanted = ("kafka_consumergroup_group_sum_lag{", "kafka_consumergroup_group_max_lag{", "lagbot_check_cycles_total")
    return [line for line in text.splitlines() if line.startswith(wanted)]


def print_summary(run: Run, client: redis.Redis, kafka: Offsets) -> None:
    """The incident, the actions and the audit from Redis; the offsets from the broker (must match)."""
    run.say(wording.demo_summary_header())
    incident = RedisIncidentStore(client).get(CLUSTER, GROUP)
    if incident is None or incident.resolved_at is None:
        raise DemoFailed(wording.demo_wait_resolved())
    run.say(
        wording.demo_incident(
            clock(incident.opened_at),
            clock(incident.resolved_at),
            incident.resolved_at - incident.opened_at,
            incident.peak_lag,
            incident.peak_severity.label,
        )
    )
    entries = list(reversed(AuditLog(client).latest(CLUSTER, GROUP, 100)))
    plans = {e.proposal: str(e.detail.get("plan", "")) for e in entries if e.event == "proposed"}
    for entry in entries:
        if entry.event in ("succeeded", "failed"):
            by = [str(u) for u in entry.detail.get("approved_by", [])]
            summary = plans.get(entry.proposal) or entry.action or ""
            run.say(wording.demo_action(summary, entry.event, by, str(entry.detail.get("detail", ""))))
    run.say(wording.demo_audit_header(keys.audit(CLUSTER, GROUP)))
    for entry in entries:
        detail = str(entry.detail.get("detail") or entry.detail.get("reason") or entry.detail.get("plan") or "")
        line = plain(messages.audit_line(clock(entry.at), entry.event, entry.user, entry.action, detail))
        run.say("  " + " ".join(line.split()))
    committed, ends = kafka.committed(), kafka.log_end()
    run.say(wording.demo_broker_header(GROUP, TOPIC))
    header = ["partition", "committed", "log-end", "lag"]
    pairs = enumerate(zip(committed, ends, strict=True))
    body = [[f"{TOPIC}/{p}", f"{c:,}", f"{e:,}", f"{e - c:,}"] for p, (c, e) in pairs]
    right = {"align": "right"}
    table = {"rows": [[{"type": "raw_text", "text": c} for c in row] for row in [header, *body]],
             "column_settings": [None, right, right, right]}  # fmt: skip
    for line in table_lines(table):
        run.say("  " + line)
    run.say("  " + wording.demo_broker_total(sum(committed), sum(ends)))
    if committed != ends:
        raise DemoFailed(wording.demo_not_caught_up(committed, ends))


@dataclass(frozen=True)
class Services:
    """What `start_services` started and a scenario acts through."""

    slack: SlackEmulator
    bot: BotProcess
    signing_secret: str
    client: redis.Redis
    kafka: Offsets
    audit: AuditLog


def start_services(run: Run, stack: ExitStack, workdir: Path, scenario: Scenario) -> Services:
    """Start the broker, redis, the emulator, the fleet, the producer and the bot (each stop registered on
    `stack`); returns once the bot is ready and the channel is being watched."""
    broker, redis_server = demo_broker(), EmbeddedRedis()
    stack.callback(broker.stop)  # before start: a process half-started is stopped too
    stack.callback(redis_server.stop)
    broker.start()
    run.say(wording.demo_broker(broker.bootstrap, broker_version(broker)))
    redis_server.start()
    run.say(wording.demo_redis(redis_server.url))
    with run.interrupts.deferred():
        slack = stack.enter_context(SlackEmulator(token=TOKEN).start())
    run.say(wording.demo_slack(slack.api_url, CHANNEL))

    kafka = Offsets(broker.bootstrap, scenario.partitions)
    stack.callback(kafka.close)
    kafka.create_topic()
    run.say(wording.demo_topic(TOPIC, scenario.partitions))

    fleets_dir = workdir / "fleets"
    fleets = LocalExecutor(LocalConfig(state_dir=fleets_dir))
    stack.callback(fleets.stop_all)
    remaining = max(1.0, run.deadline - time.monotonic())
    spec = FleetSpec(name=FLEET, bootstrap=broker.bootstrap, group=GROUP, topics=[TOPIC], replicas=1,
                     delay_ms=scenario.delay_ms, commit_every=5, commit_interval_ms=200,
                     max_seconds=remaining + 60)  # fmt: skip
    started = fleets.start(spec)
    if not started.ok:
        raise DemoFailed(started.detail)
    run.say(wording.demo_fleet(FLEET, GROUP, 1, scenario.delay_ms, str(fleets_dir)))
    fleets.wait_settled(FLEET, partitions=scenario.partitions, timeout=min(60.0, remaining))

    run.producer = BoundedProducer(broker.bootstrap, scenario, max_seconds=remaining).start()
    stack.callback(run.producer.stop)
    run.say(wording.demo_producer(scenario.per_second, scenario.partitions, scenario.limit))

    policy = workdir / "policy.yaml"
    policy.write_text(yaml.safe_dump(demo_policy(scenario)))
    config = bot_config(
        scenario, bootstrap=broker.bootstrap, redis_url=redis_server.url, api_url=slack.api_url,
        policy=policy, fleets=fleets_dir,
    )  # fmt: skip
    signing_secret = secrets.token_hex(16)
    with run.interrupts.deferred():
        bot = BotProcess(workdir, config, token=TOKEN, signing_secret=signing_secret)
        stack.callback(bot.stop)
    run.bot = bot
    run.say(wording.demo_bot(str(bot.config_path), str(policy), str(bot.log_path)))
    run.say(wording.demo_approver(APPROVER, FLEET, 1, scenario.max_replicas))
    try:
        bot.wait_ready(timeout=min(60.0, max(1.0, run.deadline - time.monotonic())))
    except EmbeddedError as exc:
        raise DemoFailed(str(exc).splitlines()[0]) from None
    run.say(wording.demo_endpoints(bot.url))
    run.say()
    run.say(wording.demo_channel_header(CHANNEL))
    run.watcher = ChannelWatcher(lambda: slack.history(CHANNEL))

    client = redis.Redis.from_url(redis_server.url, socket_timeout=5)
    stack.callback(client.close)
    return Services(slack, bot, signing_secret, client, kafka, AuditLog(client))


def play(run: Run, stack: ExitStack, workdir: Path, scenario: Scenario) -> str | None:
    """Start everything, click the scale button as the approver, then see it drain and resolve; the summary."""
    services = start_services(run, stack, workdir, scenario)
    slack, bot, audit = services.slack, services.bot, services.audit
    _, reply = run.until(wording.demo_wait_button(), lambda: find_scale_button(slack), timeout=90)
    [button, *_] = approve_buttons(reply)
    label = plain(str(button["text"]["text"]))
    run.say(wording.demo_click(clock(time.time()), APPROVER, label, bot.events_url))
    status, _, key = slack.click_button(
        bot.events_url, services.signing_secret, user=APPROVER, message=reply, action_prefix="approve:"
    )
    run.say(wording.demo_click_answered(status))
    if status != 200:
        raise DemoFailed(wording.demo_click_refused(f"HTTP {status}"))

    def result() -> AuditEntry | None:
        if slack.responses.get(key):
            raise DemoFailed(wording.demo_click_refused(plain(str(slack.responses[key][0].get("text", "")))))
        return outcome_of(audit, str(button["value"]))

    outcome = run.until(wording.demo_wait_result(), result, timeout=90)
    if outcome.event != "succeeded":
        raise DemoFailed(wording.demo_action_failed(str(outcome.detail.get("detail", ""))))
    drain_and_resolve(run, services, scenario)
    run.say()
    print_summary(run, services.client, services.kafka)
    run.say(wording.demo_metrics(bot.url))
    for line in metrics_lines(bot.url):
        run.say("  " + line)
    run.bot = None
    code = bot.stop()
    if code != 0:
        raise DemoFailed(wording.demo_bot_exited(code, str(bot.log_path)))
    return None


def drain_and_resolve(run: Run, services: Services, scenario: Scenario) -> None:
    """After a successful scale: the producer keeps writing a while, stops; the lag drains, the incident
    resolves in Redis and in the channel (one incident only)."""
    slack, kafka = services.slack, services.kafka
    assert run.producer is not None, "the producer runs until the scenario stops it"
    keep_until = time.monotonic() + scenario.keep_writing
    run.until(wording.demo_wait_keep_writing(), lambda: time.monotonic() >= keep_until, scenario.keep_writing + 1)
    written = run.producer.stop()
    run.say(wording.demo_producer_stopped(written))
    run.producer = None

    run.until(
        wording.demo_wait_drained(),
        lambda: kafka.committed() == kafka.log_end(),
        timeout=90,
    )
    outbox = RedisOutbox(services.client)
    store = RedisIncidentStore(services.client)
    run.until(wording.demo_wait_resolved(), lambda: resolved_in_channel(slack, store, outbox), timeout=90)
    run.show_channel()
    roots = slack.channel(CHANNEL)
    if len(roots) != 1:
        raise DemoFailed(wording.demo_more_incidents(len(roots)))


Player = Callable[[Run, ExitStack, Path, Scenario], "str | None"]
"""A way to play the scenario: returns its closing line (None: the terminal demo's)."""


def run_bot_demo(
    *,
    timeout: float = 170.0,
    out: TextIO | None = None,
    scenario: Scenario | None = None,
    player: Player = play,
    title: str | None = None,
) -> int:
    """Run the demo (see the module doc). Returns 0 when it showed everything, 1 on failure (one line on
    stderr naming what did not happen, the logs kept), 130 when interrupted. Never raises."""
    out = out or sys.stdout
    scenario = scenario or Scenario()
    began = time.monotonic()
    run = Run(out, deadline=began + timeout)
    workdir = Path(tempfile.mkdtemp(prefix="lagbot-demo-"))
    run.say(title or wording.demo_title(timeout))
    failure: str | None = None
    closing: str | None = None
    try:
        with run.interrupts.installed(), ExitStack() as stack:
            try:
                closing = player(run, stack, workdir, scenario)
            finally:
                run.interrupts.ignore()  # from here on everything is being stopped
    except Interrupted:
        shutil.rmtree(workdir, ignore_errors=True)
        print(wording.demo_interrupted(), file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except DemoFailed as exc:
        failure = str(exc)
    except (EmbeddedError, ExecutorError, KafkaException, redis.RedisError, OSError) as exc:
        failure = _one_line(exc)
    except Exception as exc:  # a bug: one line here, the traceback in the kept directory
        (workdir / "demo-error.log").write_text(traceback.format_exc())
        failure = f"{type(exc).__name__}: {_one_line(exc)}"
    if failure is not None:
        print(wording.demo_failed(failure, str(workdir)), file=sys.stderr, flush=True)
        return EXIT_FAILED
    shutil.rmtree(workdir, ignore_errors=True)
    run.say(closing or wording.demo_done(time.monotonic() - began))
    return 0


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
