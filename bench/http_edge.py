"""Benchmark: the HTTP edge under the flood of issue 24 #3, the home-made front before the swap beside waitress.

Each edge runs in a process of its own (`BotHTTPServer` as `lagbot run` builds it in HTTP mode: the bolt app, the
probes on a listener of their own, 8 threads, a 10 s read timeout, 64 per client), one after the other in one run.
The front before the swap is read from git at OLD_COMMIT (bot/lagbot/app/http_front.py and server.py, the last
commit that had them), so both are measured on this machine in one run. Four edges: `old` (the home-made front
as `lagbot run` built it: at most 1,000 open connections, beyond closed at once), `old-wide` (the same with room for
the flood and the commands, as its flood test set it), `waitress-one-accept` (lagbot.app.edge accepting one
connection a loop turn, as waitress does alone) and `waitress` (lagbot.app.edge as shipped). Against each, from
this process:

- the flood: --flood connections (from 40 loopback addresses, 127.0.0.2 to .41) each holding an unfinished request
  (headers announcing a body never sent); every connection the server closes (a 408, or closed idle) is opened
  again at once, as in the report;
- the junk: unsigned POSTs to /slack/events (each its own connection, from 127.0.0.99), --junk-threads senders
  without a pause, counted;
- meanwhile, from 127.0.0.1, in turn: a signed `/lag help` to /slack/events and a GET /healthz on the probes'
  port, each with Slack's 3 s as its timeout, for --seconds (25: past the 10 s read timeout twice, so the flood is
  closed and reconnects; at most --max-samples of each). Their latency (median, p99, worst) and how many were not
  answered 200 within 3 s.

Then the whole flood reconnects at once and one signed command is sent right behind it: its latency (waited for up
to 30 s, so a late answer is measured, not cut at 3 s).

Memory: the server process's resident set (VmRSS) once started, and its peak (VmHWM) at the end; its threads.

    .venv/bin/python bench/http_edge.py [--flood 1000] [--seconds 25] [--junk-threads 2]
                                        [--edges old,old-wide,waitress-one-accept,waitress]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import logging
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EDGES = ["old", "old-wide", "waitress-one-accept", "waitress"]
OLD_COMMIT = "c67f9a0cea5c17b4827ec90ea8860600c719b27b"
"""The last commit with the home-made front (lagbot.app.http_front)."""
SECRET = "bench-secret"
DEADLINE = 3.0
FLOOD_ADDRESSES = [f"127.0.0.{i}" for i in range(2, 42)]
UNFINISHED = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
JUNK = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 4\r\n\r\njunk"


# -- the server process -----------------------------------------------------------------------------------------


def old_server_module(into: Path) -> Any:
    """lagbot.app.server as it was at OLD_COMMIT, importable as `oldfront.server`."""
    package = into / "oldfront"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("http_front.py", "server.py"):
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:bot/lagbot/app/{name}"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        (package / name).write_text(
            text.replace("from lagbot.app.http_front import", "from oldfront.http_front import")
        )
    sys.path.insert(0, str(into))
    import oldfront.server

    return oldfront.server


def serve(edge: str, flood: int) -> None:
    """Serve one edge until stdin closes; its ports and the emulator's response_url as one JSON line on stdout."""
    logging.disable(logging.CRITICAL)  # a line per refused connection would be the bench's whole output
    from lagbot.devkit.emulator import SlackEmulator
    from lagbot.service.slack_api import slack_client
    from lagbot.slack.app import build_app
    from lagbot.slack.commands import Reply

    with tempfile.TemporaryDirectory() as tmp, SlackEmulator(token="xoxb-bench").start() as slack:
        if edge.startswith("old"):
            server_class = old_server_module(Path(tmp)).BotHTTPServer
        else:
            from lagbot.app.server import BotHTTPServer as server_class
        app = build_app(
            client=slack_client("xoxb-bench", slack.api_url),
            signing_secret=SECRET,
            run_command=lambda text, user, channel: Reply(text=f"echo {text}"),
        )
        server = server_class(
            host="127.0.0.1", port=0, app=app, health=lambda: (True, {"ok": True}), metrics=lambda: b"",
            signing_secret=SECRET, health_port=0, max_per_client=64,
        )  # fmt: skip
        if edge == "old-wide":  # what its flood test set: room for the flood and the commands
            server._server.max_connections = flood + 100
        if edge == "waitress-one-accept":  # what waitress does alone: one accept a loop turn
            import lagbot.app.edge

            lagbot.app.edge.ACCEPTS_PER_TURN = 1
        with server:
            server.start()
            ports = {"port": server.port, "health_port": server.health_port, "response_url": slack.response_url()}
            print(json.dumps(ports), flush=True)
            sys.stdin.read()


# -- the load ---------------------------------------------------------------------------------------------------


class Flood:
    """`count` connections holding an unfinished request, each opened again as soon as the server closes it."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.reopened = 0
        self.refused = 0
        self._selector = selectors.DefaultSelector()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        for i in range(self.count):
            self._open(FLOOD_ADDRESSES[i % len(FLOOD_ADDRESSES)])
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()

    def _open(self, source: str) -> None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5, source_address=(source, 0))
            sock.sendall(UNFINISHED)
        except OSError:
            self.refused += 1
            return
        sock.setblocking(False)
        self._selector.register(sock, selectors.EVENT_READ, source)

    def _watch(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.2):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                with contextlib.suppress(OSError):
                    sock.recv(4096)
                self._selector.unregister(sock)
                sock.close()
                self.reopened += 1
                if not self._stop.is_set():
                    self._open(key.data)


def send_junk(port: int, stop: threading.Event, counts: dict[str, int], lock: threading.Lock) -> None:
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.99", 0)) as sock:
                sock.sendall(JUNK)
                status = sock.makefile("rb").readline()[:12].decode(errors="replace").strip() or "closed"
        except OSError as exc:
            status = type(exc).__name__
        with lock:
            counts[status] = counts.get(status, 0) + 1


def timed(call: Callable[[], int]) -> tuple[float, bool]:
    started = time.perf_counter()
    try:
        ok = call() == 200
    except OSError:
        ok = False
    return time.perf_counter() - started, ok


def health(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def command(port: int, response_url: str, i: int, timeout: float = DEADLINE) -> int:
    from lagbot.devkit.signed import signature

    body = urlencode({"command": "/lag", "text": f"help {i}", "user_id": "U1", "channel_id": "C1", "team_id": "T1",
                      "response_url": response_url})  # fmt: skip
    ts = int(time.time())
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Signature": signature(SECRET, ts, body),
    }
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/slack/events", body=body.encode(), headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@dataclass
class Result:
    edge: str
    commands: list[tuple[float, bool]] = field(default_factory=list)
    probes: list[tuple[float, bool]] = field(default_factory=list)
    junk: dict[str, int] = field(default_factory=dict)
    flood_reopened: int = 0
    flood_refused: int = 0
    rss_start_mb: float = 0.0
    rss_peak_mb: float = 0.0
    threads: int = 0
    seconds: float = 0.0
    behind_burst: tuple[float, bool] = (0.0, False)


def proc_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {name: value.strip() for name, _, value in (line.partition(":") for line in lines)}


def kilobytes(value: str) -> float:
    return float(value.split()[0]) / 1024


def run_edge(edge: str, flood_size: int, seconds: float, max_samples: int, junk_threads: int) -> Result:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", edge, "--flood", str(flood_size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    result = Result(edge)
    try:
        ports = json.loads(process.stdout.readline())
        port, health_port, response_url = int(ports["port"]), int(ports["health_port"]), str(ports["response_url"])
        for i in range(5):  # warm both paths once
            health(health_port)
            command(port, response_url, i)
        result.rss_start_mb = kilobytes(proc_status(process.pid)["VmRSS"])
        flood = Flood(port, flood_size)
        flood.start()
        stop, lock = threading.Event(), threading.Lock()
        senders = [
            threading.Thread(target=send_junk, args=(port, stop, result.junk, lock), daemon=True)
            for _ in range(junk_threads)
        ]
        for sender in senders:
            sender.start()
        started = time.monotonic()
        for i in range(max_samples):
            if time.monotonic() - started >= seconds:
                break
            result.commands.append(timed(partial(command, port, response_url, i)))
            result.probes.append(timed(partial(health, health_port)))
        result.seconds = time.monotonic() - started
        status = proc_status(process.pid)
        result.rss_peak_mb, result.threads = kilobytes(status["VmHWM"]), int(status["Threads"])
        stop.set()
        for sender in senders:
            sender.join(timeout=10)
        flood.stop()
        result.flood_reopened, result.flood_refused = flood.reopened, flood.refused
        burst = Flood(port, flood_size)  # the whole flood reconnects at once; a command right behind it
        burst.start()
        result.behind_burst = timed(partial(command, port, response_url, max_samples, 30.0))
        burst.stop()
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    return result


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def describe(name: str, samples: list[tuple[float, bool]]) -> str:
    times = [t * 1000 for t, _ in samples]
    failed = sum(not ok for _, ok in samples)
    return (
        f"  {name:<16} median {statistics.median(times):8.1f} ms   p99 {quantile(times, 0.99):8.1f} ms   "
        f"worst {max(times):8.1f} ms   not answered 200 within 3 s: {failed}/{len(samples)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", choices=EDGES, help=argparse.SUPPRESS)
    parser.add_argument("--flood", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--max-samples", type=int, default=5_000)
    parser.add_argument("--junk-threads", type=int, default=2)
    parser.add_argument("--edges", default=",".join(EDGES))
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.flood)
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.flood + 1_024)), hard))
    print(
        f"flood {args.flood} held connections (re-opened when closed), {args.junk_threads} junk senders, "
        f"signed commands and probes in turn for {args.seconds:g} s; load average {os.getloadavg()[0]:.2f}"
    )
    for edge in args.edges.split(","):
        result = run_edge(edge, args.flood, args.seconds, args.max_samples, args.junk_threads)
        junk = sum(result.junk.values())
        print(f"\n{edge}: {result.seconds:.1f} s under the load; load average {os.getloadavg()[0]:.2f}")
        print(describe("signed /lag", result.commands))
        print(describe("GET /healthz", result.probes))
        print(f"  junk sent        {junk} ({junk / result.seconds:.0f}/s): {dict(sorted(result.junk.items()))}")
        took, ok = result.behind_burst
        print(f"  behind a burst   a signed /lag right behind {args.flood} reconnections: {took * 1000:.0f} ms, "
              f"{'200' if ok else 'not answered 200'}")  # fmt: skip
        print(f"  flood            re-opened {result.flood_reopened}, refused on connect {result.flood_refused}")
        print(
            f"  server process   RSS {result.rss_start_mb:.1f} MB started, peak {result.rss_peak_mb:.1f} MB; "
            f"{result.threads} threads"
        )


if __name__ == "__main__":
    main()
