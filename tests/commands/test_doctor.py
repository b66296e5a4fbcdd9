"""``noon doctor`` as a person runs it: every finding it can make, each produced by a deliberately
broken setup (missing, foreign or expiring certificates, an unreachable daemon, a corrupt line,
a fork, a clock far ahead, a peer's clock skew), and what it says when nothing is wrong."""

from __future__ import annotations

import datetime as dt
import email.utils
import re
import shutil
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from noon import certs
from noon.core.hlc import pack
from noon.core.ops import encode
from noon.store import peerstate
from tests.harness.mesh import Pki
from tests.harness.operator import (
    as_json,
    cli_env,
    doctor,
    own_cert,
    problems,
    run,
    write_op,
)

pytestmark = pytest.mark.integration

X = ("content", "default", "x")


def healthy_dir(tmp_path: Path, pki: Pki) -> Path:
    d = tmp_path / "data"
    write_op(d, "a", X, {"text": "fine"})
    own_cert(pki, d, "a")
    return d


class SkewedPeer:
    """A member whose clock runs ``offset`` seconds ahead: it answers /health over mutual TLS
    with its own certificate, and its HTTP Date says its time."""

    def __init__(self, files: tuple[Path, Path, Path], offset: float) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = b'{"status": "ok"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def date_time_string(self, timestamp: float | None = None) -> str:
                return email.utils.formatdate(time.time() + offset, usegmt=True)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context: ssl.SSLContext = certs.server_ssl_context(*files)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_doctor_healthy_without_a_daemon_when_told_so(tmp_path, pki):
    d = healthy_dir(tmp_path, pki)
    code, findings = doctor(cli_env(d, "a"), "--no-daemon")
    assert code == 0 and all(f["level"] == "ok" for f in findings), findings
    assert run("doctor", "--no-daemon", env=cli_env(d, "a")).stdout.rstrip().endswith("healthy")


def test_doctor_on_a_lone_machine_without_replication_is_healthy_with_a_note(tmp_path):
    d = tmp_path / "data"
    write_op(d, "a", X, {"text": "kept on this machine only"})
    code, findings = doctor(cli_env(d, "a"))
    assert code == 0, findings
    (note,) = [f for f in findings if f["level"] != "ok"]
    assert note["level"] == "note" and note["check"] == "replication"
    assert "noon certs init" in note["fix"]
    text = run("doctor", env=cli_env(d, "a")).stdout
    assert "NOTE" in text and "next: " in text and text.rstrip().endswith("healthy")
    # something that says it replicates (a peer source) brings the checks back
    code, findings = doctor(cli_env(d, "a") | {"NOOND_PEERS": "b@127.0.0.1:9"})
    assert code == 1 and problems(findings, "certificates")


def test_doctor_before_the_first_session_says_no_memory_yet_and_no_problem(tmp_path):
    fresh = tmp_path / "home" / ".noon"
    (tmp_path / "home").mkdir()
    code, findings = doctor(cli_env(fresh, "a"))
    assert code == 0, findings
    assert not [f for f in findings if f["level"] in ("error", "warning")], findings
    (note,) = [f for f in findings if f["check"] == "directory"]
    assert note["level"] == "note" and "no memory has been written" in note["what"]
    text = run("doctor", env=cli_env(fresh, "a")).stdout
    assert "problem" not in text and text.rstrip().endswith("healthy")
    # what it says is true: the first write creates the directory
    write_op(fresh, "a", X, {"text": "first"})
    assert fresh.is_dir()


def test_doctor_directory_that_cannot_be_created(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    code, findings = doctor(cli_env(tmp_path / "file" / "gone", "a"), "--no-daemon")
    assert code == 1
    assert "cannot create it" in problems(findings, "directory")[0]["what"]


def test_doctor_missing_certificate(tmp_path, pki):
    d = healthy_dir(tmp_path, pki)
    (d / "certs" / "a.key").unlink()
    code, findings = doctor(cli_env(d, "a"))
    assert code == 1
    (missing,) = problems(findings, "certificates")
    assert "a.key" in missing["what"] and "noon certs issue a" in missing["fix"]
    assert problems(findings, "daemon", "warning")  # not "no daemon": nothing could be asked


def test_doctor_certificate_of_another_node_and_foreign_ca(tmp_path, pki):
    d = healthy_dir(tmp_path, pki)
    cert, key, _ = pki.node("other")
    shutil.copy(cert, d / "certs" / "a.crt")
    shutil.copy(key, d / "certs" / "a.key")
    code, findings = doctor(cli_env(d, "a"), "--no-daemon")
    assert code == 1
    assert "is for node 'other'" in problems(findings, "certificates")[0]["what"]
    fcert, fkey, _ = pki.foreign("a")
    shutil.copy(fcert, d / "certs" / "a.crt")
    shutil.copy(fkey, d / "certs" / "a.key")
    code, findings = doctor(cli_env(d, "a"), "--no-daemon")
    assert code == 1 and "another CA" in problems(findings, "certificates")[0]["fix"]


def test_doctor_certificate_expiring_soon_is_a_warning(tmp_path, pki):
    d = healthy_dir(tmp_path, pki)
    now = dt.datetime.now(dt.UTC)
    certs.issue_node_cert(
        pki.root / "ca",
        "a",
        d / "certs",
        not_before=now,
        not_after=now + dt.timedelta(days=10),
        force=True,
    )
    code, findings = doctor(cli_env(d, "a"), "--no-daemon")
    assert code == 0
    (soon,) = problems(findings, "certificates", "warning")
    assert "expires in 9 days" in soon["what"] or "expires in 10 days" in soon["what"]
    expired = pki.expired("a")
    shutil.copy(expired[0], d / "certs" / "a.crt")
    shutil.copy(expired[1], d / "certs" / "a.key")
    code, findings = doctor(cli_env(d, "a"), "--no-daemon")
    assert code == 1 and "expired" in problems(findings, "certificates")[0]["what"]


def test_doctor_unreachable_daemon(tmp_path, pki):
    d = healthy_dir(tmp_path, pki)
    code, findings = doctor(cli_env(d, "a"))
    assert code == 1
    (down,) = problems(findings, "daemon")
    assert "no daemon answers" in down["what"] and "systemctl" in down["fix"]


def test_doctor_corrupt_line_with_its_place(tmp_path, pki):
    d = healthy_dir(tmp_path, pki)
    with open(d / "a.jsonl", "ab") as f:
        f.write(b"{not an op}\n")
    write_op(d, "a", X, {"text": "after the damage"})
    code, findings = doctor(cli_env(d, "a"), "--no-daemon")
    assert code == 1
    (bad,) = problems(findings, "shards")
    assert f"{d / 'a.jsonl'}:2:" in bad["what"] and "own shard" in bad["fix"]


def test_doctor_fork(tmp_path, pki):
    d = healthy_dir(tmp_path, pki)
    line = encode(node="a", seq=1, hlc=7, el=X, val={"text": "forked"})
    (d / "a-restored.jsonl").write_bytes(line + b"\n")
    code, findings = doctor(cli_env(d, "a"), "--no-daemon")
    assert code == 1
    (fork,) = problems(findings, "fork")
    assert "a-restored.jsonl:1" in fork["what"] and "NOON_NODE_ID" in fork["fix"]
    status = as_json(run("status", "--json", env=cli_env(d, "a")))
    assert status["conflicts_total"] is None and "a-restored.jsonl" in status["forks"][0]["error"]


def test_doctor_op_stamped_by_a_clock_far_ahead(tmp_path, pki):
    d = healthy_dir(tmp_path, pki)
    ahead = pack(time.time_ns() // 1_000_000 + 3_600_000, 0)
    (d / "b.jsonl").write_bytes(
        encode(node="b", seq=1, hlc=ahead, el=("content", "default", "y"), val={"text": "t"})
        + b"\n"
    )
    code, findings = doctor(cli_env(d, "a"), "--no-daemon")
    assert code == 1
    (skew,) = problems(findings, "clock")
    assert "b:1" in skew["what"] and "in the future" in skew["what"]
    assert "NTP" in skew["fix"]


@pytest.mark.parametrize(("offset", "level"), [(600.0, "error"), (20.0, "warning"), (0.0, "ok")])
def test_doctor_peer_clock_skew(tmp_path, pki, offset, level):
    d = healthy_dir(tmp_path, pki)
    peer = SkewedPeer(pki.node("skewed"), offset)
    try:
        peerstate.update(
            d / ".noon" / "noond.json", lambda s: s.members.update(skewed=peer.address)
        )
        code, findings = doctor(cli_env(d, "a"))  # no daemon: members from the state file
    finally:
        peer.close()
    about = [f for f in findings if "peer skewed" in f["what"]]
    assert len(about) == 1 and about[0]["level"] == level, findings
    if level != "ok":
        assert about[0]["check"] == "clock" and "NTP" in about[0]["fix"]
    measured = re.search(r"differs from ours by ([+-][0-9.]+) s", about[0]["what"])
    assert measured and abs(float(measured.group(1)) - offset) <= 2
    assert code == 1  # the daemon itself is unreachable in every case
