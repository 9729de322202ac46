"""The wording of the demos and the dev kit (embedded services, Apache Kafka for tests).

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import count, duration


def broker_label(apache_version: str | None) -> str:
    """A development broker as the demo names it: Apache Kafka (fetched) or the embedded Tansu."""
    return "embedded Tansu (Kafka protocol)" if apache_version is None else f"Apache Kafka {apache_version} (KRaft)"


def demo_started(bootstrap: str, apache_version: str | None) -> str:
    return f"{broker_label(apache_version)} listening on {bootstrap}; setting up two consumer groups ..."


def demo_thresholds(thresholds: str) -> str:
    return f"demo thresholds, scaled to its small numbers: {thresholds}"


def demo_exit(code: int) -> str:
    meaning = {0: "nothing at warn or above", 1: "warn", 2: "critical or page", 3: "a cluster or group unreadable"}
    return f"demo done: `lagbot check` on these groups exits {code} ({meaning.get(code, 'bad configuration or usage')})"


TERMINAL_EMOJI = {
    "large_green_circle": "●", "large_yellow_circle": "●", "red_circle": "●", "rotating_light": "🚨",
    "white_circle": "○", "white_check_mark": "✔", "ballot_box_with_check": "☑", "x": "✖", "warning": "⚠",
    "gear": "⚙", "wrench": "🔧", "mag": "🔍", "bell": "🔔", "no_bell": "🔕", "no_entry": "⛔", "repeat": "↻",
    "arrow_up": "↑", "arrow_down": "↓", "test_tube": "🧪", "no_entry_sign": "🚫", "hourglass": "⌛", "recycle": "♻",
    "arrows_counterclockwise": "🔄", "wastebasket": "🗑", "cyclone": "🌀",
}  # fmt: skip
"""Slack emoji shortcodes lagbot uses, as characters for the demo's terminal transcript."""


def demo_title(timeout: float) -> str:
    return (
        "lagbot demo: the Slack bot end to end on embedded services (a Kafka broker, redis-server, an emulated "
        f"Slack workspace, a local consumer fleet); it stops by itself within {timeout:g} s"
    )


def demo_broker(bootstrap: str, apache_version: str | None) -> str:
    return f"  broker     {broker_label(apache_version)} on {bootstrap}"


def demo_redis(url: str) -> str:
    return f"  redis      redis-server on {url}"


def demo_slack(api_url: str, channel: str) -> str:
    return f"  slack      emulated Web API on {api_url}; the bot posts to channel {channel}"


def demo_topic(topic: str, partitions: int) -> str:
    return f"  topic      {topic}, {partitions} partitions"


def demo_fleet(fleet: str, group: str, members: int, delay_ms: float, state_dir: str) -> str:
    return (
        f"  consumers  fleet {fleet} (group {group}): {members} member, {delay_ms:g} ms per message "
        f"(~{1000 / delay_ms:.0f} msg/s at most); state in {state_dir}"
    )


def demo_producer(per_second: int, partitions: int, limit: int) -> str:
    return f"  producer   {per_second} msg/s over {partitions} partitions, at most {count(limit)} messages"


def demo_bot(config: str, policy: str, log: str) -> str:
    return f"  bot        lagbot run --config {config} (policy {policy}; log {log})"


def demo_endpoints(url: str) -> str:
    return f"  bot HTTP   {url}/healthz  {url}/metrics  {url}/slack/events (signed requests only)"


def demo_approver(user: str, fleet: str, low: int, high: int) -> str:
    return f"  policy     {user} may approve scaling {fleet} between {low} and {high} replicas"


def demo_channel_header(channel: str) -> str:
    return f"--- channel {channel} (emulated Slack), as the bot writes it ---"


def demo_event(clock: str, kind: str) -> str:
    label = {"posted": "new message", "reply": "  ↳ thread reply", "edited": "message edited"}.get(kind, kind)
    return f"[{clock}] {label}"


def demo_click(clock: str, user: str, label: str, url: str) -> str:
    return f"[{clock}] {user} clicks [ {label} ] (a signed block_actions request to {url})"


def demo_click_answered(status: int) -> str:
    return f"           the app answered HTTP {status}"


def demo_click_refused(text: str) -> str:
    return f"the bot refused the approval: {text}"


def demo_producer_stopped(written: int) -> str:
    return f"[producer] stopped after {count(written)} messages"


def demo_summary_header() -> str:
    return "--- summary ---"


def demo_incident(opened: str, resolved: str, lasted: float, peak_lag: int | None, peak: str) -> str:
    return (
        f"incident   opened {opened}, resolved {resolved} (after {duration(lasted)}); "
        f"peak lag {count(peak_lag)} ({peak.upper()})"
    )


def demo_action(action: str, outcome: str, by: Sequence[str], detail: str) -> str:
    return f"action     {action}: {outcome}, approved by {', '.join(by) or '-'}: {detail}"


def demo_audit_header(key: str) -> str:
    return f"audit      (read from Redis, {key}), oldest first:"


def demo_broker_header(group: str, topic: str) -> str:
    return f"broker     (read back now) group {group} on {topic}:"


def demo_broker_total(committed: int, log_end: int) -> str:
    verdict = "committed == log end on every partition" if committed == log_end else "NOT caught up"
    return f"total: committed {count(committed)}, log end {count(log_end)}: {verdict}"


def demo_metrics(url: str) -> str:
    return f"/metrics    ({url}/metrics, read before the bot stopped):"


def demo_done(seconds: float) -> str:
    return f"demo done in {duration(seconds)}: one incident opened, scaled with an approval, drained, resolved"


def demo_failed(reason: str, kept: str) -> str:
    return f"lagbot demo failed: {reason} (logs kept in {kept})"


def demo_interrupted() -> str:
    return "lagbot demo interrupted: everything it started is stopped"


def demo_timed_out(what: str, seconds: float) -> str:
    return f"timed out after {duration(seconds)} waiting for {what}"


def demo_bot_exited(code: int | None, log: str) -> str:
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    return f"`lagbot run` {how} (its log: {log})"


def demo_producer_failed(error: str) -> str:
    return f"the producer failed: {error}"


def demo_more_incidents(n: int) -> str:
    return f"the bot opened {n} incidents; one was expected"


def demo_action_failed(detail: str) -> str:
    return f"the scale failed: {detail}"


def demo_not_caught_up(committed: Sequence[int], log_end: Sequence[int]) -> str:
    return f"committed {list(committed)} != log end {list(log_end)}"


def demo_wait_button() -> str:
    return "the bot's scale button in the incident thread"


def demo_wait_result() -> str:
    return "the scale to run"


def demo_wait_drained() -> str:
    return "the consumers to commit up to the log end"


def demo_wait_resolved() -> str:
    return "the incident to resolve in the channel"


def demo_wait_keep_writing() -> str:
    return "the producer's last seconds"


def demo_web_title(timeout: float) -> str:
    return (
        "lagbot demo --web: the Slack bot end to end on embedded services, its channel served as a web page; "
        f"it stops on Ctrl-C or after {timeout:g} s"
    )


def demo_web_url(url: str, user: str) -> str:
    return f"  web        open {url} in a browser: the channel as Slack shows it; you click its buttons as {user}"


def demo_web_url_again(url: str) -> str:
    return f"  (waiting for your click in the page: open {url})"


def demo_web_wait_decision() -> str:
    return "an Approve or Deny… click in the page"


def demo_web_decided(clock: str, event: str, user: str | None) -> str:
    return f"[{clock}] {event} in the page by {user or 'nobody'}"


def demo_web_serving(url: str) -> str:
    return f"the page stays at {url} until Ctrl-C (or the --timeout)"


def demo_web_done(seconds: float, outcome: str) -> str:
    return f"demo --web done after {seconds:.0f} s: {outcome}"


WEB_PHASES = {
    "starting": "Starting Kafka, Redis, the consumers and the bot…",
    "waiting": "The consumers fall behind; the bot checks the group every few seconds…",
    "offered": "The bot proposes a remediation in the incident thread: Approve it (or Deny it with a reason).",
    "running": "Approved: the bot runs the remediation and verifies it over the next checks…",
    "resolved": "The lag drained and the incident resolved. That is the whole story; Ctrl-C in the terminal ends it.",
    "denied": "Denied: nothing runs. The incident stays open until the lag goes down on its own.",
    "stopped": "The demo stopped.",
}
"""What the web demo's page says above the channel, per phase of the scenario."""


WEB_OUTCOMES = {
    "resolved": "scaled with an approval from the page, drained, resolved",
    "denied": "the remediation was denied from the page",
    "stopped": "stopped before anyone approved or denied",
}


def web_bad_request(problem: str) -> str:
    return f"bad request: {problem}"


def web_unknown(what: str, value: str) -> str:
    return f"no {what} {value!r} in the channel"


# -- the local consumer fleet (lagbot.devkit.fleet) ------------------------------------------------------------


def fleet_bad_name(name: str) -> str:
    return f"{name!r} is not a fleet name (letters, digits, '_', '.', '-', not starting with '.')"


def fleet_unknown(fleet: str) -> str:
    return f"no fleet called {fleet}: start it first"


def fleet_unreadable(path: str, problem: str) -> str:
    return f"cannot read {path}: {problem}"


def fleet_already_running(fleet: str, members: int) -> str:
    return f"fleet {fleet} already runs {members} member(s): scale it, or stop it first"


def fleet_started(fleet: str, group: str, members: int) -> str:
    return f"fleet {fleet} started: {members} member(s) consuming as group {group}"


def fleet_stopped(fleet: str, members: int) -> str:
    return f"fleet {fleet} stopped ({members} member(s))"


def fleet_restarted(fleet: str, members: int) -> str:
    return f"rolling restart of fleet {fleet} done: {members} member(s) restarted one at a time"


def fleet_no_member(fleet: str, client_id: str, client_ids: Sequence[str]) -> str:
    known = ", ".join(client_ids) if client_ids else "none"
    return f"fleet {fleet} has no live member with client id {client_id!r} (live: {known}); nothing restarted"


def fleet_member_not_started(client_id: str, seconds: float, log_tail: str) -> str:
    return f"member {client_id} did not report running within {seconds:g} s; its log ends:\n{log_tail}".rstrip()


def fleet_locked(fleet: str, seconds: float) -> str:
    return f"fleet {fleet} is being changed by another process; gave up waiting after {seconds:g} s"


def fleet_not_settled(fleet: str, seconds: float, members: Sequence[str]) -> str:
    return f"fleet {fleet} did not settle within {seconds:g} s: {'; '.join(members) or 'no live members'}"


def fleet_member_not_joined(client_id: str, seconds: float) -> str:
    return f"member {client_id} did not join its group within {seconds:g} s; the rolling restart stops here"
