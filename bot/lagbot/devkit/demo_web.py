"""`lagbot demo --web`: the bot demo's Slack channel served as a page on 127.0.0.1 that looks like Slack.

The scenario and everything it runs are the terminal demo's (lagbot.devkit.demo_bot): the broker, redis, the Slack
emulator, the consumer fleet, the producer and `lagbot run` as a child process. Instead of the demo clicking
the scale button, a person does, in the page: the page shows what the emulator holds (the root message as
edited in place, the thread with the per-partition table and the causes, the buttons), polls it for changes,
and a click on Approve (after its confirm dialog, if any) or Deny… (then the reason modal the bot opens)
is sent to the bot by the emulator as the same signed request Slack sends. Plain stdlib HTTP: GET / (the page,
bot/devkit/static/demo.html), GET /api/state, POST /api/click, /api/submit, /api/close (JSON bodies only).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, TextIO, cast

from lagbot.devkit import wording
from lagbot.devkit.demo_bot import (
    APPROVER,
    CHANNEL,
    CLUSTER,
    GROUP,
    DemoFailed,
    Run,
    Scenario,
    Services,
    approve_buttons,
    clock,
    drain_and_resolve,
    find_scale_button,
    run_bot_demo,
    start_services,
)
from lagbot.devkit.emulator import Message
from lagbot.devkit.interrupts import Interrupted
from lagbot.service.audit import AuditEntry, AuditLog

WEB_SCENARIO = Scenario(limit=6_000)
"""The terminal demo's numbers, the producer bounded to a minute of writing: a late click still finds a backlog
that four consumers drain within the demo's waits, and no click at all lets it drain on its own."""

MAX_BODY = 64 * 1024
DECISIONS = ("succeeded", "failed", "denied")


@dataclass(frozen=True)
class WebDemo:
    """What `on_ready` is given once the page is served: its address and the services behind it."""

    url: str
    services: Services
    page: DemoPage


class BadRequest(Exception):
    """A request the page server refuses: the HTTP status and a message naming what is wrong."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class DemoPage:
    """The page's model: the channel as the emulator holds it, the phase of the scenario, and the clicks and
    modal submissions a person makes, sent to the bot as Slack sends them. Thread-safe."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self._lock = threading.Lock()
        self._phase = "waiting"
        self._closed_views: set[str] = set()
        self._response_keys: list[str] = []

    @property
    def phase(self) -> str:
        with self._lock:
            return self._phase

    @phase.setter
    def phase(self, phase: str) -> None:
        with self._lock:
            self._phase = phase

    def state(self) -> dict[str, Any]:
        """Everything the page draws, with a `version` that changes whenever any of it does."""
        slack = self._services.slack
        with self._lock:
            phase, closed, keys = self._phase, set(self._closed_views), list(self._response_keys)
        history = [self._with_time(_message_json(m)) for m in slack.history(CHANNEL)]
        views = [v for v in slack.views if str(v.get("id")) not in closed]
        notices = [str(r.get("text", "")) for key in keys for r in slack.responses.get(key, [])]
        body = {
            "channel": CHANNEL,
            "user": APPROVER,
            "phase": phase,
            "phase_text": wording.WEB_PHASES.get(phase, phase),
            "messages": history,
            "view": views[-1] if views else None,
            "notices": notices,
            "emoji": wording.TERMINAL_EMOJI,
        }
        body["version"] = hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return body

    def _with_time(self, message: dict[str, Any]) -> dict[str, Any]:
        """The message with `at`: when the bot posted it, as Slack shows it (the emulator's ts values are counters)."""
        return {**message, "at": message["posted_at"]}

    def click(self, body: dict[str, Any]) -> dict[str, Any]:
        """Click the button `action_id` of the message `ts` as the approver (a block_actions request)."""
        ts, action_id = _text_field(body, "ts"), _text_field(body, "action_id")
        message = self._message(ts)
        ids = [str(e.get("action_id", "")) for b in message.blocks if b.get("type") == "actions"
               for e in b.get("elements", [])]  # fmt: skip
        if action_id not in ids:
            raise BadRequest(HTTPStatus.NOT_FOUND, wording.web_unknown("button", action_id))
        index = [i for i in ids if i.startswith(action_id)].index(action_id)
        services = self._services
        status, _, key = services.slack.click_button(
            services.bot.events_url, services.signing_secret, user=APPROVER, message=message,
            action_prefix=action_id, index=index,
        )  # fmt: skip
        with self._lock:
            self._response_keys.append(key)
        return {"status": status}

    def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        """Submit the open modal `view_id` with `values` ({block_id: {action_id: text}}), as Slack does."""
        view = self._view(_text_field(body, "view_id"))
        values = body.get("values")
        if not isinstance(values, dict) or not all(
            isinstance(actions, dict) and all(isinstance(v, str) for v in actions.values())
            for actions in values.values()
        ):
            raise BadRequest(HTTPStatus.BAD_REQUEST, wording.web_bad_request("values must map block ids to texts"))
        services = self._services
        status, answer = services.slack.submit_view(
            services.bot.events_url, services.signing_secret, user=APPROVER, view=view, values=values
        )
        errors = _response_errors(answer)
        if status == 200 and not errors:
            self.close(body)
        return {"status": status, "errors": errors}

    def close(self, body: dict[str, Any]) -> dict[str, Any]:
        """Close the modal `view_id` (Cancel): it is no longer drawn."""
        view_id = _text_field(body, "view_id")
        self._view(view_id)
        with self._lock:
            self._closed_views.add(view_id)
        return {"status": 200}

    def _message(self, ts: str) -> Message:
        for message in self._services.slack.history(CHANNEL):
            if message.ts == ts:
                return message
        raise BadRequest(HTTPStatus.NOT_FOUND, wording.web_unknown("message", ts))

    def _view(self, view_id: str) -> dict[str, Any]:
        for view in self._services.slack.views:
            if str(view.get("id")) == view_id:
                return view
        raise BadRequest(HTTPStatus.NOT_FOUND, wording.web_unknown("modal", view_id))


def _message_json(message: Message) -> dict[str, Any]:
    fields = asdict(message)
    return {k: fields[k] for k in ("ts", "thread_ts", "text", "blocks", "edits", "files", "posted_at")}


def _text_field(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise BadRequest(HTTPStatus.BAD_REQUEST, wording.web_bad_request(f"{name} must be a non-empty string"))
    return value


def _response_errors(answer: str) -> dict[str, str]:
    """The field errors of a view_submission answer (`response_action: errors`), else {}."""
    try:
        parsed = json.loads(answer) if answer.strip() else {}
    except ValueError:
        return {}
    if isinstance(parsed, dict) and parsed.get("response_action") == "errors":
        errors = parsed.get("errors")
        return {str(k): str(v) for k, v in errors.items()} if isinstance(errors, dict) else {}
    return {}


def page_html() -> bytes:
    return resources.files("lagbot.devkit").joinpath("static/demo.html").read_bytes()


class PageServer:
    """The page and its API on 127.0.0.1:`port` (0: a free port), in a thread; `stop()` closes it."""

    def __init__(self, page: DemoPage, port: int = 0) -> None:
        self.page = page
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.page = page
        self._server.html = page_html()
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="demo-web", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def start(self) -> PageServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class _Server(ThreadingHTTPServer):
    page: DemoPage
    html: bytes


ACTIONS: dict[str, Callable[[DemoPage, dict[str, Any]], dict[str, Any]]] = {
    "/api/click": DemoPage.click,
    "/api/submit": DemoPage.submit,
    "/api/close": DemoPage.close,
}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged: the terminal shows the channel."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/":
            self._send(HTTPStatus.OK, self.server.html, "text/html; charset=utf-8")
        elif path == "/api/state":
            self._json(HTTPStatus.OK, self.server.page.state())
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": wording.web_bad_request(f"no page {path}")})

    def do_POST(self) -> None:
        action = ACTIONS.get(self.path)
        try:
            if action is None:
                raise BadRequest(HTTPStatus.NOT_FOUND, wording.web_bad_request(f"no action {self.path}"))
            self._json(HTTPStatus.OK, action(self.server.page, self._body()))
        except BadRequest as exc:
            self._json(exc.status, {"error": str(exc)})

    def _body(self) -> dict[str, Any]:
        """The JSON object posted. Only application/json is taken: a form another site posts to this
        address is refused (a cross-site JSON post needs a preflight, which is never granted)."""
        if self.headers.get_content_type() != "application/json":
            raise BadRequest(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, wording.web_bad_request("send application/json"))
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise BadRequest(HTTPStatus.BAD_REQUEST, wording.web_bad_request("bad Content-Length")) from None
        if not 0 < length <= MAX_BODY:
            raise BadRequest(HTTPStatus.BAD_REQUEST, wording.web_bad_request(f"a body of 1..{MAX_BODY} bytes"))
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            raise BadRequest(HTTPStatus.BAD_REQUEST, wording.web_bad_request("the body is not JSON")) from None
        if not isinstance(body, dict):
            raise BadRequest(HTTPStatus.BAD_REQUEST, wording.web_bad_request("the body must be a JSON object"))
        return body

    def _json(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _send(self, status: HTTPStatus, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)


# ---------------------------------------------------------------------------------------------------
# The scenario, with a person clicking
# ---------------------------------------------------------------------------------------------------


def decision_of(audit: AuditLog, proposal: str) -> AuditEntry | None:
    """The proposal's outcome in the audit trail (succeeded, failed or denied), else None."""
    entries = audit.latest(CLUSTER, GROUP, 100)
    return next((e for e in entries if e.proposal == proposal and e.event in DECISIONS), None)


def approved(audit: AuditLog, proposal: str) -> bool:
    return any(e.proposal == proposal and e.event == "approved" for e in audit.latest(CLUSTER, GROUP, 100))


def play_web(
    run: Run,
    stack: ExitStack,
    workdir: Path,
    scenario: Scenario,
    *,
    port: int,
    stop: threading.Event,
    on_ready: Callable[[WebDemo], None] | None,
) -> str:
    """Start everything and serve the page; wait for a person's decision in it, then for the resolution;
    serve on until `stop`, Ctrl-C or the deadline. Returns the closing line."""
    began = time.monotonic()
    services = start_services(run, stack, workdir, scenario)
    page = DemoPage(services)
    with run.interrupts.deferred():
        server = PageServer(page, port).start()
        stack.callback(server.stop)
    run.say(wording.demo_web_url(server.url, APPROVER))
    if on_ready is not None:
        on_ready(WebDemo(server.url, services, page))
    remind = Reminder(run, server.url, every=REMIND_EVERY)

    def ended() -> bool:
        return stop.is_set() or time.monotonic() >= run.deadline - 1

    def offered() -> tuple[Message, Message] | bool:
        remind()
        return find_scale_button(services.slack) or ended()

    found = cast("tuple[Message, Message] | bool", run.until(wording.demo_wait_button(), offered, 90))
    outcome = "stopped"
    if not isinstance(found, bool):
        page.phase = "offered"
        proposal = str(approve_buttons(found[1])[0]["value"])

        def decided() -> AuditEntry | bool | None:
            if approved(services.audit, proposal):
                page.phase = "running"
            else:
                remind()
            return decision_of(services.audit, proposal) or ended()

        entry = run.until(wording.demo_web_wait_decision(), decided, run.deadline - time.monotonic())
        if isinstance(entry, AuditEntry):
            outcome = _after_decision(run, services, scenario, page, entry)
    page.phase = outcome
    run.say(wording.demo_web_serving(server.url))
    serve_until(run, stop)
    return wording.demo_web_done(time.monotonic() - began, wording.WEB_OUTCOMES[outcome])


def _after_decision(run: Run, services: Services, scenario: Scenario, page: DemoPage, entry: AuditEntry) -> str:
    run.say(wording.demo_web_decided(clock(entry.at), entry.event, entry.user))
    if entry.event == "failed":
        raise DemoFailed(wording.demo_action_failed(str(entry.detail.get("detail", ""))))
    if entry.event == "denied":
        return "denied"
    drain_and_resolve(run, services, scenario)
    return "resolved"


REMIND_EVERY = 15.0
"""Seconds between two reminders of the page's address while the demo waits for a click."""


class Reminder:
    """While the demo waits for a click, the page's address again every `every` seconds, once the channel has
    printed something since: the first one scrolls off the terminal within about 20 s."""

    def __init__(self, run: Run, url: str, *, every: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._run, self._url, self._every, self._clock = run, url, every, clock
        self._last = clock()

    def __call__(self) -> bool:
        """Print the reminder if it is due; whether it did."""
        now = self._clock()
        if now - self._last < self._every:
            return False
        self._last = now
        self._run.say(wording.demo_web_url_again(self._url))
        return True


def serve_until(run: Run, stop: threading.Event) -> None:
    """Keep the page (and the channel in the terminal) live until `stop`, Ctrl-C or the deadline."""
    try:
        while not stop.is_set() and time.monotonic() < run.deadline:
            run.show_channel()
            stop.wait(0.2)
    except Interrupted:
        return


def run_web_demo(
    *,
    timeout: float = 900.0,
    port: int = 0,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
    on_ready: Callable[[WebDemo], None] | None = None,
) -> int:
    """`lagbot demo --web`: exit codes as the terminal demo's (0 shown, 1 failed, 130 interrupted before the
    scenario was over). `stop` ends it from another thread; `on_ready` is called once the page is served."""
    player = partial(play_web, port=port, stop=stop or threading.Event(), on_ready=on_ready)
    return run_bot_demo(
        timeout=timeout, out=out, scenario=WEB_SCENARIO, player=player, title=wording.demo_web_title(timeout)
    )
