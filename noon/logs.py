"""Logging setup shared by ``noon`` and ``noond``: one line per event, to stderr (the journal
under systemd). ``NOON_LOG_FORMAT=json`` makes every line a JSON object (``time``, ``level``,
``logger``, ``message``, and ``exception`` when there is one) for log shippers; the default is
``text``: ``time LEVEL logger: message``."""

from __future__ import annotations

import json
import logging
import os
import sys

from noon.config import ConfigError

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def setup(level: int, env: dict[str, str] | None = None) -> None:
    """Log to stderr at ``level`` in the format ``NOON_LOG_FORMAT`` names."""
    fmt = (env if env is not None else os.environ).get("NOON_LOG_FORMAT", "").strip().lower()
    if fmt not in ("", "text", "json"):
        raise ConfigError(f"NOON_LOG_FORMAT must be text or json, got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
