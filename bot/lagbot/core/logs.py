"""Structured logs: one JSON object per line on stderr, with the `extra` fields of each call."""

from __future__ import annotations

import json
import logging
import sys
import time

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as JSON: time, level, logger, message, then every `extra` field."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        document.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            document["exc"] = self.formatException(record.exc_info)
        return json.dumps(document, default=str)


def configure_logging(*, verbose: bool = False) -> None:
    """JSON lines on stderr: INFO and up when verbose, else WARNING; librdkafka only when verbose."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    # librdkafka repeats connection failures every second; the check reports them once, in plain words.
    logging.getLogger("librdkafka").setLevel(logging.INFO if verbose else logging.CRITICAL)
