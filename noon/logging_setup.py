"""Logging setup shared by ``noon`` and ``noond``: one line per event, to stderr (journald
under systemd). ``NOON_LOG_FORMAT=json`` makes every line a JSON object (``time``, ``level``,
``logger``, ``message``, and ``exception`` when there is one) for log shippers; the default is
``text``: ``time LEVEL logger: message``.

Every line goes through :class:`RateLimit`: a message that repeats (the same logger and format
string, whatever its arguments) is written at most ``burst`` times per ``window`` seconds, and
what was held back is counted in one summary line when the window ends. A peer, a client or a
file that makes noon log on every request cannot fill a disk through the journal."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable

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


class RateLimit(logging.Filter):
    """At most ``burst`` records per message template per ``window`` seconds; the next record of
    a template after its window reports how many were held back."""

    MAX_TEMPLATES = 4096
    """Templates tracked at once; beyond it the oldest windows are forgotten (bounded memory
    even if a caller puts variable text into the format string itself)."""

    def __init__(
        self, burst: int = 20, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], list[float]] = {}
        """(logger, template) -> [window start, written, held back]"""

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self.clock()
        with self._lock:
            entry = self._seen.get(key)
            if entry is None or now - entry[0] >= self.window:
                held = int(entry[2]) if entry is not None else 0
                if len(self._seen) >= self.MAX_TEMPLATES:
                    for old in list(self._seen)[: self.MAX_TEMPLATES // 4]:
                        del self._seen[old]
                self._seen[key] = [now, 1, 0]
                if held:
                    record.msg = f"{record.msg} [{held} similar message(s) held back before this]"
                return True
            if entry[1] < self.burst:
                entry[1] += 1
                return True
            entry[2] += 1
            return False


def setup(level: int, env: dict[str, str] | None = None) -> None:
    """Log to stderr at ``level`` in the format ``NOON_LOG_FORMAT`` names, rate-limited."""
    fmt = (env if env is not None else os.environ).get("NOON_LOG_FORMAT", "").strip().lower()
    if fmt not in ("", "text", "json"):
        raise ConfigError(f"NOON_LOG_FORMAT must be text or json, got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RateLimit())
    logging.basicConfig(level=level, handlers=[handler], force=True)


class Condition:
    """A condition that persists (a full disk): logged once when it starts, then at most once
    per ``every`` seconds with how often it recurred meanwhile, and once when it ends; not once
    per request or round that meets it."""

    def __init__(
        self,
        logger: logging.Logger,
        every: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.every = every
        self.clock = clock
        self._lock = threading.Lock()
        self.since: float | None = None
        self._told = 0.0
        self._recurred = 0

    def met(self, message: str, *args: object) -> None:
        now = self.clock()
        with self._lock:
            if self.since is None:
                self.since, self._told, self._recurred = now, now, 0
            elif now - self._told < self.every:
                self._recurred += 1
                return
            else:
                message = f"{message} (still so: met {self._recurred + 1} more time(s) since)"
                self._told, self._recurred = now, 0
        self.logger.warning(message, *args)

    def ended(self, message: str, *args: object) -> None:
        with self._lock:
            if self.since is None:
                return
            self.since = None
        self.logger.warning(message, *args)
