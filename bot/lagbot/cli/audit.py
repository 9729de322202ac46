"""`lagbot audit export`: the audit trail as JSON lines, for a SIEM or a ticket.

Exit codes: 0 written, 4 bad usage or configuration (named), 3 Redis unreachable.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from lagbot.cli import wording
from lagbot.core import messages
from lagbot.core.errors import ConfigError

EXIT_REDIS_UNREACHABLE = 3


def export(*, config: Path | None, since: str | None, group: str | None) -> int:
    """Write every audit entry as one JSON object per line, oldest first."""
    if config is None and "LAGBOT_CLUSTERS" not in os.environ:
        raise ConfigError(wording.cli_audit_needs_config())
    import redis  # here, not at the top: the other commands of `lagbot` never load the Redis client

    from lagbot.core.config import load_settings, parse_duration
    from lagbot.service.audit import AuditLog

    settings = load_settings(config)
    if not settings.redis_url:
        raise ConfigError(messages.bot_needs_redis())
    try:
        window = None if since is None else parse_duration(since)
    except ValueError as exc:
        raise ConfigError(wording.bad_option("--since", str(exc))) from None
    start = None if window is None else time.time() - window
    try:
        client = redis.Redis.from_url(settings.redis_url, socket_timeout=10, socket_connect_timeout=5)
        for entry in AuditLog(client).export(since=start):
            if group is None or entry.group == group:
                sys.stdout.write(json.dumps(json.loads(entry.to_json()), sort_keys=True) + "\n")
    except redis.RedisError as exc:
        print(messages.redis_unreachable(settings.redis_url, str(exc)), file=sys.stderr)
        return EXIT_REDIS_UNREACHABLE
    return 0
