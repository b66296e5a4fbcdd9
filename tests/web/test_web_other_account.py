"""Another account of the machine against ``noon web`` on loopback (issue 25, item 1): the page
needs its token on every bind, so the account ``nobody`` (a real second user, through
``setpriv``) reads nothing and writes nothing, and cannot learn the token from the process;
the person, with the address ``noon web`` printed, is served meanwhile."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.harness.mesh import subprocess_env
from tests.harness.page import split_address, web_server
from tests.harness.web import open_store, seed, text_of

pytestmark = pytest.mark.integration

PYTHON = "/usr/bin/python3"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", PYTHON, "-c"]

ATTEMPTS = r"""
import json, sys, urllib.error, urllib.request
base, pid = sys.argv[1], sys.argv[2]
def call(method, path, body=None, **headers):
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=20) as r:
            return [r.status, r.read().decode()[:300]]
    except urllib.error.HTTPError as exc:
        return [exc.code, exc.read().decode()[:300]]
def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError as exc:
        return "refused: " + type(exc).__name__
write = {"uri": "core://user", "text": "Rewritten by another account."}
print(json.dumps({
    "uid": __import__("os").getuid(),
    "info": call("GET", "/api/info"),
    "memory": call("GET", "/api/memory?uri=core://user"),
    "changes": call("GET", "/api/changes"),
    "write": call("POST", "/api/memory/text", write),
    "write_guessed_session": call("POST", "/api/memory/text", write, **{"X-Noon-Session": "x"}),
    "write_empty_bearer": call("POST", "/api/memory/text", write, Authorization="Bearer "),
    "events": call("GET", "/api/events"),
    "cmdline": read(f"/proc/{pid}/cmdline"),
    "environ": read(f"/proc/{pid}/environ"),
}))
"""


def get(url: str, token: str) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=20) as r:
        return r.status, json.loads(r.read())


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not os.access(PYTHON, os.X_OK),
    reason="needs root, setpriv and /usr/bin/python3 to act as the account nobody",
)
def test_another_account_gets_nothing_from_the_page_on_loopback(tmp_path: Path) -> None:
    store = open_store(tmp_path / "laptop")
    seed(store)
    shard, before = store.own, store.own.read_bytes()
    store.close()
    env = subprocess_env(NOON_FSYNC="false")
    with web_server(tmp_path / "laptop", "laptop", env=env) as (address, proc):
        base, token = split_address(address)
        assert token is not None and len(token) >= 40  # made up at start, printed once
        pid = proc.pid
        started = time.monotonic()
        done = subprocess.run(
            [*NOBODY, ATTEMPTS, base, str(pid)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        took = time.monotonic() - started
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        assert seen["uid"] == 65534
        for name in ("info", "memory", "changes", "write", "write_guessed_session", "events"):
            status, body = seen[name]
            assert status == 401 and "Log in first" in body, (name, seen[name])
        assert seen["write_empty_bearer"][0] == 401
        assert token not in seen["cmdline"] and "noon" in seen["cmdline"]
        assert seen["environ"].startswith("refused: PermissionError")
        assert took < 60, took
        # The person, holding the printed address, is served while and after.
        status, memory = get(f"{base}/api/memory?uri=core://user", token)
        assert status == 200 and memory["text"] == "The user is Salem. Salem likes tea."
    assert shard.read_bytes() == before  # nothing written
    assert text_of(tmp_path / "laptop", "laptop", "core://user") == (
        "The user is Salem. Salem likes tea."
    )
