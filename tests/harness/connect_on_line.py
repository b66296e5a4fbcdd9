"""A ``noon`` command whose "serving ... on URL" line is a trigger: inside the very write that
prints it, before the command goes on, one connection is made to URL and one request sent (no
retry); a thread then prints on stdout what came back: ``answered <status>``, or
``refused: <error>``. Were the line printed before the listener listens, the connection would be
refused, whatever the machine's speed.

``python -m tests.harness.connect_on_line web|serve ARGS...`` (``noon web`` is asked
``GET /api/info`` with ``NOON_TOKEN``; ``noon serve --http`` an MCP ``initialize``).
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading
from typing import Any, TextIO
from urllib.parse import urlsplit

from noon import cli
from tests.harness.mcp import INITIALIZE

LINE = re.compile(r"serving (?:the page|MCP) on (http://\S+)")


def request(url: str) -> bytes:
    parts = urlsplit(url)
    host = f"{parts.hostname}:{parts.port}"
    if "#token=" in url or "/mcp" not in parts.path:
        token = os.environ["NOON_TOKEN"]
        head = f"GET /api/info HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        return (head + "Connection: close\r\n\r\n").encode()
    body = json.dumps(INITIALIZE).encode()
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {host}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def answer(sock: socket.socket) -> None:
    with sock:
        status = sock.makefile("rb").readline().decode(errors="replace").split()
    print("answered " + (status[1] if len(status) > 1 else "nothing"), flush=True)


class Probe:
    """stderr, connecting once at the serving line."""

    def __init__(self, real: TextIO) -> None:
        self.real = real
        self.done = False

    def write(self, text: str) -> int:
        n = self.real.write(text)
        self.real.flush()
        found = LINE.search(text)
        if found and not self.done:
            self.done = True
            url = found.group(1).split("#", 1)[0]
            parts = urlsplit(url)
            try:
                sock = socket.create_connection((parts.hostname, parts.port), timeout=60)
                sock.sendall(request(found.group(1)))
            except OSError as exc:
                print(f"refused: {exc}", flush=True)
            else:
                threading.Thread(target=answer, args=(sock,), daemon=True).start()
        return n

    def flush(self) -> None:
        self.real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def main() -> int:
    sys.stderr = Probe(sys.stderr)
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
