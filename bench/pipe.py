"""A minimal synchronous MCP client over a subprocess's stdin/stdout (newline-delimited
JSON-RPC), so property tests can drive long-lived servers from plain synchronous code. Every read
has a deadline."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from typing import Any


class PipeError(Exception):
    pass


class PipeClient:
    def __init__(
        self, argv: list[str], env: dict[str, str], cwd: str | None = None, timeout: float = 20
    ) -> None:
        self.timeout = timeout
        """Seconds each request may wait for its answer (the first one includes the start)."""
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        assert self.proc.stdout is not None
        self._fd = self.proc.stdout.fileno()
        os.set_blocking(self._fd, False)
        self._buf = b""
        self.received = 0.0
        """``time.perf_counter()`` when the last message read had arrived whole (its last byte
        read), before it was parsed: a server's answer time without the client's parsing."""
        self._id = 0
        self.notifications: list[dict[str, Any]] = []
        self.initialize_result = self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "differential", "version": "1"},
            },
        )
        self.notify("notifications/initialized")

    def _send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj).encode() + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    def _read_message(self, deadline: float) -> dict[str, Any]:
        if b"\n" not in self._buf:
            chunks = [self._buf]
            sel = selectors.DefaultSelector()
            sel.register(self._fd, selectors.EVENT_READ)
            try:
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise PipeError("no answer before the deadline")
                    if sel.select(left):
                        chunk = os.read(self._fd, 1 << 20)
                        if not chunk:
                            raise PipeError("server closed its stdout")
                        chunks.append(chunk)
                        if b"\n" in chunk:
                            self.received = time.perf_counter()
                            break
            finally:
                sel.close()
            self._buf = b"".join(chunks)
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self._id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    return {"__error__": reply["error"]}
                return reply["result"]
            if "method" in reply and "id" not in reply:
                self.notifications.append(reply)

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        return self.request("tools/call", {"name": tool, "arguments": args})

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
