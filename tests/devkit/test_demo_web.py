"""`lagbot demo --web` in a real browser: Debian's headless Chromium over the DevTools protocol.

The web demo runs in a thread (its services are the terminal demo's: the broker, redis, the Slack emulator, the
consumer fleet and `lagbot run` as a child process). Chromium opens the page, waits for the incident thread's
approve button, clicks it and the confirm dialog's Approve with real mouse events; the page sends the bot the
signed request Slack would send. Asserted: the page follows the bot live to the resolution (its DOM against
the emulator's messages, the incident in Redis, the audit trail, the emulator's recorded calls, the broker's
offsets), then a screenshot (saved to $LAGBOT_SCREENSHOT when set: `make screenshot` writes docs/demo-web.png).
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import struct
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lagbot.devkit.demo_bot import APPROVER, CHANNEL, CLUSTER, FLEET, GROUP, approve_buttons, find_scale_button
from lagbot.devkit.demo_web import WebDemo, run_web_demo
from lagbot.devkit.transcript import plain
from lagbot.service.incidents import RedisIncidentStore
from tests.support.chromium import Chromium, wait_for

pytestmark = pytest.mark.integration

APPROVE = '#thread-body button[data-action-id^="approve:"]'


def post(url: str, body: bytes, content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def refuse_bad_requests(web: WebDemo) -> None:
    """Bad requests to the page's API: a 4xx naming what is wrong, and nothing sent to the bot."""
    api = web.url + "api/"
    form = post(api + "click", b"ts=1&action_id=x", "application/x-www-form-urlencoded")
    assert form == (415, {"error": "bad request: send application/json"})
    assert post(api + "click", b"{not json") == (400, {"error": "bad request: the body is not JSON"})
    assert post(api + "click", b"[1, 2]") == (400, {"error": "bad request: the body must be a JSON object"})
    assert post(api + "click", b'{"ts": ""}') == (400, {"error": "bad request: ts must be a non-empty string"})
    unknown = post(api + "click", b'{"ts": "1.2", "action_id": "approve:x"}')
    assert unknown == (404, {"error": "no message '1.2' in the channel"})
    assert post(api + "submit", b'{"view_id": "V1", "values": {}}') == (404, {"error": "no modal 'V1' in the channel"})
    assert post(api + "nothing", b"{}") == (404, {"error": "bad request: no action /api/nothing"})
    assert web.services.slack.calls_to("views.open") == []
    assert [e.event for e in web.services.audit.latest(CLUSTER, GROUP, 100) if e.event != "proposed"] == []


def held_message(slack: Any, ts: str) -> Any:
    [message] = [m for m in slack.history(CHANNEL) if m.ts == ts]
    return message


def held_table(slack: Any, ts: str) -> list[list[str]]:
    """The cells of the table block of the message `ts`, as the emulator holds it now."""
    [table] = [b for b in held_message(slack, ts).blocks if b["type"] == "table"]
    return [[str(cell.get("text", "")) for cell in row] for row in table["rows"]]


def drawn_table(browser: Chromium, ts: str) -> list[list[str]]:
    """The cells of the table the page draws in the thread for the message `ts`."""
    found = browser.evaluate(
        f"(() => {{ const t = document.querySelector('#thread-body .msg[data-ts=\"{ts}\"] table');"
        " return t ? [...t.rows].map(r => [...r.cells].map(c => c.textContent)) : []; })()"
    )
    return [[str(cell) for cell in row] for row in found]


def same_table(browser: Chromium, slack: Any, ts: str) -> list[list[str]] | None:
    """The page's table of the message `ts` when it is the emulator's (a poll may be on its way), else None."""
    drawn = drawn_table(browser, ts)
    return drawn if drawn and drawn == held_table(slack, ts) else None


class DemoThread:
    """run_web_demo in a thread; `ready()` is its WebDemo once the page is served."""

    def __init__(self) -> None:
        self.out = io.StringIO()
        self.stop = threading.Event()
        self._ready: queue.Queue[WebDemo] = queue.Queue()
        self.code: int | None = None
        self._thread = threading.Thread(target=self._run, name="web-demo", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.code = run_web_demo(timeout=400, out=self.out, stop=self.stop, on_ready=self._ready.put)

    def ready(self) -> WebDemo:
        wait_for("the page to be served", lambda: not self._ready.empty() or not self._thread.is_alive(), 120)
        assert not self._ready.empty(), f"the web demo ended first (exit {self.code}):\n{self.out.getvalue()}"
        return self._ready.get_nowait()

    def finish(self) -> int | None:
        self.stop.set()
        self._thread.join(timeout=120)
        assert not self._thread.is_alive(), "the web demo did not stop"
        return self.code


def test_approve_in_chromium_resolves_the_incident_and_the_page_follows_it(tmp_path: Path) -> None:
    demo = DemoThread()
    try:
        web = demo.ready()
        slack = web.services.slack
        refuse_bad_requests(web)
        with Chromium(tmp_path / "chromium") as browser:
            browser.navigate(web.url)
            wait_for(
                "the approve button in the thread",
                lambda: browser.evaluate(f"!!document.querySelector('{APPROVE}')"),
                120,
            )
            # The phase banner follows on the page's next poll (every 0.5 s): waited for, not assumed.
            wait_for(
                "the page to say the remediation is offered",
                lambda: browser.evaluate("document.getElementById('phase').dataset.phase") == "offered",
                10,
            )
            found = find_scale_button(slack)
            assert found is not None
            [button] = approve_buttons(found[1])
            label = plain(button["text"]["text"])
            table_reply = slack.thread(CHANNEL, found[0].ts)[0]  # the incident's first reply: its table
            offered_table = wait_for(
                "the page's table as the emulator holds it", lambda: same_table(browser, slack, table_reply.ts), 10
            )
            offered_edits = held_message(slack, table_reply.ts).edits
            scaled = re.fullmatch(rf"Scale {FLEET} 1 -> ([234])", label)
            assert scaled is not None, label  # the replicas that keep up, from the rates measured (at most 4)
            assert browser.evaluate(f"document.querySelector('{APPROVE}').textContent") == label
            assert slack.calls_to("views.open") == []

            browser.click(APPROVE)
            wait_for("the confirm dialog", lambda: browser.evaluate("!!document.getElementById('confirm')"), 10)
            dialog = browser.evaluate("document.getElementById('confirm').innerText")
            confirm = button["confirm"]
            assert dialog == "\n".join([confirm["title"]["text"], plain(confirm["text"]["text"]), "Cancel", "Approve"])
            said = f"lagbot will scale {FLEET} 1 -> {scaled[1]}. This is recorded in the audit trail."
            assert dialog.splitlines()[1] == said
            browser.click('#confirm button[data-confirm="yes"]')

            wait_for(
                "the page to show the incident resolved",
                lambda: browser.evaluate("document.getElementById('phase').dataset.phase") == "resolved",
                240,
            )
            browser.send("Input.dispatchMouseEvent", type="mouseMoved", x=0, y=0)  # no hover highlight in the shot
            screenshot = browser.screenshot()

            # The page draws exactly the emulator's messages, each root edit included (the root edited in place).
            drawn = browser.evaluate(
                "[...document.querySelectorAll('#channel .msg, #thread-body .msg')]"
                ".map(m => [m.dataset.ts, Number(m.dataset.edits)])"
            )
            held = slack.history(CHANNEL)
            assert sorted({ts for ts, _ in drawn}) == sorted(m.ts for m in held)
            assert {ts: edits for ts, edits in drawn} == {m.ts: m.edits for m in held}
            [root] = slack.channel(CHANNEL)
            assert root.edits > 1
            # The table follows the incident: its reply was edited with the root, and the page draws the latest.
            assert held_message(slack, table_reply.ts).edits > offered_edits
            final_table = wait_for("the page's latest table", lambda: same_table(browser, slack, table_reply.ts), 10)
            assert final_table != offered_table
            assert final_table[0] == ["partition", "committed", "log-end", "lag", "lag s", "owner", "status"]
            lags = [row[3] for row in final_table[1:]]
            assert len(lags) == 4 and lags != [row[3] for row in offered_table[1:]]

            incident = RedisIncidentStore(web.services.client).get(CLUSTER, GROUP)
            assert incident is not None and incident.resolved_at is not None and incident.peak_lag is not None
            root_text = browser.evaluate(f"document.querySelector('#channel .msg[data-ts=\"{root.ts}\"]').innerText")
            assert f"RESOLVED {GROUP} on {CLUSTER}: resolved after" in root_text
            assert f"peak {incident.peak_lag:,}" in root_text
            thread_text = browser.evaluate("document.getElementById('thread-body').innerText")
            assert f"Approved by @{APPROVER}: running {label}" in thread_text
            assert "Partitions of orders-consumer (4), lagging first" in thread_text

        # What Slack got: one root message, edited in place; replies in its thread only; no modal opened.
        posts = slack.calls_to("chat.postMessage")
        assert [c.status for c in posts] == [200] * len(posts)
        assert [c.args.get("thread_ts") for c in posts if not c.args.get("thread_ts")] == [None]
        assert {c.args.get("thread_ts") for c in posts if c.args.get("thread_ts")} == {root.ts}
        assert {c.args.get("ts") for c in slack.calls_to("chat.update")} <= {m.ts for m in slack.history(CHANNEL)}
        assert slack.calls_to("views.open") == []

        # The click reached the bot as the approver's signed request: the audit trail and the fleet say so.
        entries = list(reversed(web.services.audit.latest(CLUSTER, GROUP, 100)))
        decisions = [(e.event, e.user) for e in entries if e.event in ("approved", "refused", "denied", "succeeded")]
        assert decisions == [("approved", APPROVER), ("succeeded", decisions[-1][1])]
        assert entries[0].event == "proposed"
        [succeeded] = [e for e in entries if e.event == "succeeded"]
        assert succeeded.detail.get("approved_by") == [APPROVER]
        assert web.services.kafka.committed() == web.services.kafka.log_end()
        assert f"fleet {FLEET} from 1 to {scaled[1]} replicas" in thread_text
    finally:
        code = demo.finish()
    assert code == 0, demo.out.getvalue()
    assert "demo --web done after" in demo.out.getvalue()
    assert "scaled with an approval from the page, drained, resolved" in demo.out.getvalue()

    assert png_size(screenshot) == (1440, 900)
    (tmp_path / "demo-web.png").write_bytes(screenshot)
    target = os.environ.get("LAGBOT_SCREENSHOT")
    if target:
        Path(target).write_bytes(screenshot)


def test_deny_in_chromium_asks_for_a_reason_in_a_modal_and_nothing_runs(tmp_path: Path) -> None:
    deny = '#thread-body button[data-action-id^="deny:"]'
    reason = "the consumers are being redeployed"
    demo = DemoThread()
    try:
        web = demo.ready()
        slack = web.services.slack
        with Chromium(tmp_path / "chromium") as browser:
            browser.navigate(web.url)
            offered = f"!!document.querySelector('{deny}')"
            wait_for("the deny button in the thread", lambda: browser.evaluate(offered), 120)
            found = find_scale_button(slack)
            assert found is not None
            label = plain(approve_buttons(found[1])[0]["text"]["text"])

            browser.click(deny)
            wait_for("the reason modal", lambda: browser.evaluate("!!document.getElementById('modal')"), 30)
            [opened] = slack.calls_to("views.open")
            view = json.loads(opened.args["view"]) if isinstance(opened.args["view"], str) else opened.args["view"]
            assert browser.evaluate("document.querySelector('#modal h2').textContent") == view["title"]["text"]
            assert browser.evaluate("document.querySelector('#modal label').textContent") == plain(
                view["blocks"][0]["label"]["text"]
            )
            browser.click("#modal textarea")
            browser.send("Input.insertText", text=reason)
            browser.click('#modal button[data-view="submit"]')

            wait_for(
                "the page to show the denial",
                lambda: browser.evaluate("document.getElementById('phase').dataset.phase") == "denied",
                60,
            )
            said = f"@{APPROVER} denied {label}: {reason}"
            thread = "document.getElementById('thread-body').innerText"
            wait_for("the denial in the thread", lambda: said in browser.evaluate(thread), 30)
            assert browser.evaluate("document.getElementById('modal')") is None

        entries = web.services.audit.latest(CLUSTER, GROUP, 100)
        [denied] = [e for e in entries if e.event == "denied"]
        assert (denied.user, denied.detail.get("reason")) == (APPROVER, reason)
        assert [e.event for e in entries if e.event in ("approved", "succeeded", "failed", "refused")] == []
        assert [c.status for c in slack.calls_to("views.open")] == [200]
    finally:
        code = demo.finish()
    assert code == 0, demo.out.getvalue()
    assert "the remediation was denied from the page" in demo.out.getvalue()
