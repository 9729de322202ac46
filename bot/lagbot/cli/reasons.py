"""Why a cluster could not be read, in words a newcomer can act on, and `lagbot check --json`'s document.

The Kafka client says "Timed out" whether the broker's port refused the connection, its name did not resolve, or
nothing answered at all. When a cluster could not be read, each of its bootstrap servers is tried once with a plain
TCP connection (`server_reason`), and what failed is added to the cluster's error: "kafka-1 does not resolve",
"127.0.0.1:9 refused the connection". A server that accepts the connection adds nothing (the error is then further on:
TLS, SASL, the broker itself). Only a check that failed pays for this.
"""

from __future__ import annotations

import socket
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lagbot.cli import wording
from lagbot.cli.exits import exit_code
from lagbot.cli.pods import NO_PODS, CheckPods, cause_pods_json

if TYPE_CHECKING:
    from lagbot.core.config import Settings
    from lagbot.engine.check import CheckReport

PROBE_TIMEOUT = 3.0
"""Seconds one TCP connection to a bootstrap server may take, at most (less with a smaller request timeout)."""


def with_reasons(report: CheckReport, settings: Settings) -> CheckReport:
    """`report` with each unreachable cluster's error followed by why its bootstrap servers could not be reached."""
    if not report.cluster_errors:
        return report
    servers = {c.name: (c.bootstrap_servers, c.request_timeout) for c in settings.clusters}
    errors = {}
    for cluster, error in report.cluster_errors.items():
        bootstrap, timeout = servers.get(cluster, ("", PROBE_TIMEOUT))
        reason = bootstrap_reason(bootstrap, min(timeout, PROBE_TIMEOUT))
        errors[cluster] = error if reason is None else wording.cli_unreachable_because(error, reason)
    return replace(report, cluster_errors=errors)


def bootstrap_reason(servers: str, timeout: float) -> str | None:
    """Why none of `servers` (comma-separated HOST:PORT) takes a TCP connection, or None when one of them does."""
    reasons = []
    for server in (s.strip() for s in servers.split(",")):
        if not server:
            continue
        reason = server_reason(server, timeout)
        if reason is None:
            return None
        reasons.append(reason)
    return "; ".join(reasons) or None


def split_server(server: str) -> tuple[str, int] | None:
    """`host:port`, `[::1]:9092` or `SASL_SSL://host:port` as (host, port); None when it is not one."""
    address = server.rpartition("://")[2]
    host, _, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit():
        return None
    return host, int(port)


def server_reason(server: str, timeout: float) -> str | None:
    """Why `server` takes no TCP connection within `timeout` seconds, or None when it takes one."""
    address = split_server(server)
    if address is None:
        return None
    host, port = address
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        return wording.cli_host_does_not_resolve(host, getattr(exc, "strerror", None) or str(exc))
    reason = None
    for family, kind, proto, _, sockaddr in found:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.settimeout(timeout)
                probe.connect(sockaddr)
            return None
        except ConnectionRefusedError:
            reason = wording.cli_connection_refused(server)
        except TimeoutError:
            reason = wording.cli_no_answer(server, timeout)
        except OSError as exc:
            reason = wording.cli_connection_failed(server, exc.strerror or str(exc))
    return reason


def check_json(report: CheckReport, pods: CheckPods = NO_PODS) -> dict[str, Any]:
    """`lagbot check --json`'s document: the engine's report (lagbot.engine.report), with on top whether everything
    could be read (`readable`: false when a cluster or a group could not be, its lag unknown), the clusters that could
    not be read (`unreachable`), the exit code and why the owners' pods could not be read (`pods_error`, null when
    they could or none was to be read); each cause with the owners' pods read for it (`pods`, lagbot.cli.pods)."""
    from lagbot.engine.report import report_json
    from lagbot.service.remedies import remedy

    document = report_json(report, remedy=remedy)
    top: dict[str, Any] = {key: document.pop(key) for key in ("version", "taken_at", "severity") if key in document}
    for verdict, group in zip(report.verdicts, document["groups"], strict=True):
        for cause, shown in zip(verdict.causes, group["causes"], strict=True):
            shown["pods"] = cause_pods_json(cause, verdict, pods)
    return {
        **top,
        "readable": not report.unreadable,
        "unreachable": sorted(report.cluster_errors),
        "exit_code": exit_code(report),
        "pods_error": pods.error,
        **document,
    }
