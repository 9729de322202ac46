"""Headless Chromium (Debian's `chromium`, installed by `make browser`) driven over the DevTools protocol.

`Chromium(tmp_dir)` starts it with a fresh profile in `tmp_dir` and a DevTools port it picks itself (read back
from its DevToolsActivePort file); `page.navigate(url)`, `page.evaluate(js)`, `page.click(selector)` (real mouse
events at the element's centre), `page.screenshot()` (PNG bytes); `close()` stops it. Every wait is bounded.
"""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any, Self

import websocket

from tests.support import waiting

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]


class ChromiumError(Exception):
    """Chromium could not be started or did not answer in time."""


def wait_for(what: str, probe: Any, timeout: float, every: float = 0.1) -> Any:
    """Poll `probe()` until it returns something truthy; ChromiumError naming `what` after `timeout` s."""
    return waiting.wait_for(what, probe, timeout, every, error=ChromiumError)


class Chromium:
    def __init__(self, profile: Path, *, width: int = 1440, height: int = 900) -> None:
        if not CHROMIUM.exists():
            raise ChromiumError(f"{CHROMIUM} is missing: run `make browser` (apt-get install -y chromium, as root)")
        profile.mkdir(parents=True, exist_ok=True)
        self._profile = profile
        self._log = (profile / "chromium.log").open("wb")
        self.process = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self._ws: websocket.WebSocket | None = None
        self._ids = itertools.count(1)
        try:
            port = wait_for("Chromium's DevTools port", self._port, 30)
            target = wait_for("a page target", lambda: self._page_target(port), 10)
            self._ws = websocket.create_connection(target, timeout=30, suppress_origin=True)
            metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
            self.send("Emulation.setDeviceMetricsOverride", **metrics)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _port(self) -> int | None:
        if self.process.poll() is not None:
            raise ChromiumError(f"Chromium exited with {self.process.returncode}; see {self._profile}/chromium.log")
        active = self._profile / "DevToolsActivePort"
        try:
            first = active.read_text().splitlines()[0]
        except (OSError, IndexError):
            return None
        return int(first)

    @staticmethod
    def _page_target(port: int) -> str | None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
            targets = json.load(response)
        return next((str(t["webSocketDebuggerUrl"]) for t in targets if t.get("type") == "page"), None)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; its result (events received meanwhile are dropped)."""
        assert self._ws is not None
        ident = next(self._ids)
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            reply = json.loads(self._ws.recv())
            if reply.get("id") != ident:
                continue
            if "error" in reply:
                raise ChromiumError(f"{method}: {reply['error']}")
            result: dict[str, Any] = reply.get("result", {})
            return result

    def navigate(self, url: str) -> None:
        self.send("Page.enable")
        self.send("Page.navigate", url=url)
        wait_for(f"{url} to load", lambda: self.evaluate("document.readyState") == "complete", 30)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def click(self, selector: str) -> None:
        """A real left click (press and release) at the centre of the first element matching `selector`."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise ChromiumError(f"nothing matches {selector}")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self._log.close()
