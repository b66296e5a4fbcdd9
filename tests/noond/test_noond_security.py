"""What a daemon refuses: other nodes' shards, foreign, expired and revoked certificates,
oversized bodies, garbage ops, unknown protocol revisions, unsafe names. Every refusal is a
clear JSON error and stores nothing."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from noon.core.ops import decode, encode
from tests.harness import signed
from tests.harness.mesh import ROOT, Node, Pki, free_port, noon_command, wait_until

pytestmark = pytest.mark.integration

SIGNERS = ("alice", "bigbob", "carol", "gina", "henry", "mona", "paula")
"""The nodes these tests push as: the target knows their signing certificates."""


@pytest.fixture(scope="module")
def metrics_port() -> int:
    """Where the target's plaintext metrics listener listens."""
    return free_port()


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, pki: Pki, metrics_port: int) -> Iterator[Node]:
    n = Node("target", tmp_path_factory.mktemp("sec"), pki)
    pki.know_signers(n.dir, *SIGNERS)
    n.start(
        NOOND_MAX_BODY="65536",
        NOOND_REVOKED="mallory",
        NOOND_METRICS_LISTEN=f"127.0.0.1:{metrics_port}",
    )
    yield n
    n.stop()


def op_line(node: str, seq: int, text: str = "t") -> bytes:
    return encode(
        node=node,
        seq=seq,
        hlc=(1_700_000_000_000 << 16) + seq,
        el=("content", "default", f"{node}-{seq}"),
        val={"text": text},
        prev=None,
        by="test",
        bat=None,
    )


def body(target: Node, node: str, n: int, text: str = "t") -> bytes:
    """``node``'s first ``n`` ops, signed with its key (which ``target`` knows)."""
    return signed.body(
        signed.signed(target.pki, node, [op_line(node, i, text) for i in range(1, n + 1)])
    )


def error_of(raw: bytes) -> dict[str, str]:
    obj = json.loads(raw)
    assert set(obj) >= {"error", "code"}
    return obj


def test_a_peer_pushes_its_own_shard(node):
    status, _, raw = node.request(
        "POST", "/shards/alice/ops?after=0", body(node, "alice", 3), as_node="alice"
    )
    assert status == 200, raw
    assert json.loads(raw) == {"appended": 3, "skipped": 0, "head": 3}
    # Pushing the same again is idempotent.
    status, _, raw = node.request(
        "POST", "/shards/alice/ops?after=0", body(node, "alice", 3), as_node="alice"
    )
    assert json.loads(raw) == {"appended": 0, "skipped": 3, "head": 3}


def test_pushing_another_nodes_shard_is_refused(node):
    status, _, raw = node.request(
        "POST", "/shards/carol/ops?after=0", body(node, "carol", 1), as_node="bob"
    )
    assert status == 403
    assert error_of(raw)["code"] == "forbidden"
    assert not (node.dir / "carol.jsonl").exists()


def test_pushing_the_receivers_own_shard_is_refused(node):
    status, _, _ = node.request(
        "POST", "/shards/target/ops?after=0", body(node, "target", 1), as_node="target"
    )
    assert status == 403


@pytest.mark.parametrize("kind", ["foreign", "expired"])
def test_foreign_and_expired_certificates_fail_the_handshake(node, pki, kind):
    files = pki.foreign("eve") if kind == "foreign" else pki.expired("eve")
    with pytest.raises((ssl.SSLError, ConnectionError)):
        node.request("POST", "/shards/eve/ops?after=0", body(node, "eve", 1), files=files)
    assert not (node.dir / "eve.jsonl").exists()


def test_a_client_trusting_another_ca_refuses_the_server(node, pki):
    cert, key, _ = pki.node("alice")
    _, _, foreign_ca = pki.foreign("someone")
    with pytest.raises(ssl.SSLError):
        node.request("GET", "/info", files=(cert, key, foreign_ca))


def test_a_revoked_certificate_is_refused_on_every_route(node):
    for method, path in (
        ("GET", "/info"),
        ("GET", "/shards"),
        ("POST", "/shards/mallory/ops?after=0"),
    ):
        status, _, raw = node.request(
            method, path, body(node, "mallory", 1) if method == "POST" else None, as_node="mallory"
        )
        assert status == 403, (path, raw)
    assert not (node.dir / "mallory.jsonl").exists()


def test_revocation_through_the_cli_takes_effect(node, tmp_path):
    env = {
        "NOON_DIR": str(node.dir),
        "NOON_NODE_ID": "target",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
    }
    assert node.request("GET", "/info", as_node="trudy")[0] == 200
    out = noon_command("peers", "revoke", "trudy", env=env)
    assert out.returncode == 0, out.stderr
    wait_until(
        lambda: node.request("GET", "/info", as_node="trudy")[0] == 403, what="revocation to apply"
    )
    out = noon_command("peers", "revoke", "trudy", "--undo", env=env)
    assert out.returncode == 0
    wait_until(lambda: node.request("GET", "/info", as_node="trudy")[0] == 200)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_body_is_refused_with_413(node, chunked):
    big = body(node, "bigbob", 600)
    assert len(big) > 65536
    try:
        status, _, raw = node.request(
            "POST", "/shards/bigbob/ops?after=0", big, as_node="bigbob", chunked=chunked
        )
    except ConnectionError:  # the server may close while the rest is still being sent
        status, raw = 413, b'{"error": "", "code": "too_large"}'
    assert status == 413
    assert error_of(raw)["code"] == "too_large"
    assert not (node.dir / "bigbob.jsonl").exists()


@pytest.mark.parametrize(
    "payload,reason",
    [
        (b"this is not json\n", "not JSON"),
        (b'{"v":1,"node":"gary","seq":1}\n', "hlc"),
        (op_line("gary", 1) + b"\n" + op_line("gary", 1) + b"\n", "does not follow"),
        (op_line("other", 1) + b"\n", "op of node 'other'"),
        (op_line("gary", 1) + b"\n" + b'{"v":1,"node":"gary","seq":2,"hlc":5,"el":7}\n', "line 2"),
    ],
)
def test_garbage_ops_are_refused_and_nothing_is_stored(node, payload, reason):
    status, _, raw = node.request("POST", "/shards/gary/ops?after=0", payload, as_node="gary")
    assert status == 400
    err = error_of(raw)
    assert err["code"] == "invalid_ops"
    assert reason in err["error"] and "nothing stored" in err["error"]
    assert not (node.dir / "gary.jsonl").exists()


def test_a_push_past_what_the_receiver_holds_is_a_gap(node):
    status, _, raw = node.request(
        "POST", "/shards/gina/ops?after=5", body(node, "gina", 7), as_node="gina"
    )
    assert status == 409
    assert error_of(raw)["code"] == "gap"


def test_a_push_whose_older_ops_differ_is_a_fork_and_stores_nothing(node):
    """The receiver holds henry's ops 1-3; a restored henry pushes 4-5 after 3, and its
    ``check`` at 3 cannot be compared (say the receiver collected op 3): its ``checks`` on
    ops 1-2 still show that it wrote another history."""
    status, _, raw = node.request(
        "POST", "/shards/henry/ops?after=0", body(node, "henry", 3), as_node="henry"
    )
    assert status == 200, raw
    checks = ",".join(
        f"{i}:{decode(op_line('henry', i, text='restored')).digest:016x}" for i in (2, 1)
    )
    more = b"".join(body(node, "henry", 5, text="restored").splitlines(keepends=True)[3:])
    status, _, raw = node.request(
        "POST", f"/shards/henry/ops?after=3&checks={checks}", more, as_node="henry"
    )
    assert status == 409 and error_of(raw)["code"] == "fork", raw
    assert "op 2 differs" in error_of(raw)["error"]
    _, _, page = node.request("GET", "/shards/henry/ops?after=0", as_node="alice")
    assert page.count(b"\n") == 3  # nothing stored


def test_another_protocol_revision_gets_a_clear_error(node):
    status, _, raw = node.request("GET", "/info", as_node="alice")
    low, high = json.loads(raw)["revisions"]
    assert (low, high) == (1, 2)  # it has its signing key: revision 2, and 1 for older peers
    for said in ("1", "2"):
        status, _, raw = node.request(
            "GET", "/shards", as_node="alice", headers={"X-Noon-Protocol": said}
        )
        assert status == 200, raw
    status, _, raw = node.request(
        "GET", "/shards", as_node="alice", headers={"X-Noon-Protocol": "3"}
    )
    assert status == 400
    err = error_of(raw)
    assert err["code"] == "protocol" and "revisions 1..2" in err["error"]
    # /info still answers, so the newer peer can learn what this one speaks; to a caller of
    # an older release it says the caller's own revision, the only one that release accepts.
    status, _, raw = node.request("GET", "/info", as_node="alice", headers={"X-Noon-Protocol": "3"})
    assert status == 200 and json.loads(raw)["revisions"] == [1, 2]
    assert json.loads(raw)["protocol"] == 2
    status, _, raw = node.request("GET", "/info", as_node="alice", headers={"X-Noon-Protocol": "1"})
    assert status == 200 and json.loads(raw)["protocol"] == 1


@pytest.mark.parametrize(
    "path,status",
    [
        ("/shards/..%2Fetc/ops", 400),
        ("/shards/a..b/ops", 400),
        ("/shards/alice/ops?after=-1", 400),
        ("/shards/alice/ops?after=abc", 400),
        ("/shards/alice/ops?check=xyz", 400),
        ("/shards/alice/ops?checks=1:xyz", 400),
        ("/shards/alice/ops?checks=-1:0000000000000001", 400),
        ("/shards/alice/ops?checks=" + ",".join(["1:0000000000000001"] * 33), 400),
        ("/nope", 404),
    ],
)
def test_unsafe_names_and_bad_parameters_are_refused(node, path, status):
    got, _, raw = node.request("GET", path, as_node="alice")
    assert got == status, raw
    error_of(raw)


def test_wrong_method_is_405(node):
    status, _, raw = node.request("DELETE", "/shards/alice/ops", as_node="alice")
    assert status == 405
    assert error_of(raw)["code"] == "method_not_allowed"


def test_op_stream_pages_and_compresses(node):
    node.request("POST", "/shards/paula/ops?after=0", body(node, "paula", 50), as_node="paula")
    status, headers, raw = node.request(
        "GET",
        "/shards/paula/ops?after=10&limit=1024",
        as_node="alice",
        headers={"Accept-Encoding": "gzip"},
    )
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    import gzip

    lines = gzip.decompress(raw).splitlines()
    first = json.loads(lines[0])["seq"]
    assert first == 11
    assert headers["X-Noon-More"] == "1"
    assert int(headers["X-Noon-Last"]) == 10 + len(lines)
    assert headers["X-Noon-Head"] == "50"


def test_metrics_are_prometheus_text_with_units(node):
    status, _, raw = node.request("GET", "/metrics", as_node="alice")
    assert status == 200
    text = raw.decode()
    for name in (
        "noond_rounds_total",
        "noond_round_duration_seconds_bucket",
        "noond_http_requests_total",
        "noond_rejected_total",
        "noond_forks_detected_total",
        "noond_client_received_bytes_total",
    ):
        assert name in text, name
    assert "_created" not in text
    node.request("GET", "/health", as_node="alice")
    node.request("POST", "/shards/mona/ops?after=0", body(node, "mona", 1), as_node="mona")
    text = node.request("GET", "/metrics", as_node="alice")[2].decode()
    assert 'noond_http_requests_total{code="200",method="GET",route="/health"}' in text
    assert 'noond_server_received_bytes_total{route="/shards/{node}/ops"}' in text


def test_plaintext_off_loopback_needs_an_explicit_opt_in(tmp_path: Path):
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "NOON_DIR": str(tmp_path),
        "NOON_NODE_ID": "p",
        "NOOND_TLS": "off",
        "NOOND_LISTEN": "0.0.0.0:0",
    }
    out = subprocess.run(
        [sys.executable, "-m", "noond"], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert "NOOND_ALLOW_PLAINTEXT" in out.stderr


def test_the_optional_plaintext_metrics_listener_serves_nothing_else(node, metrics_port):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        assert resp.status == 200 and b"noond_rounds_total" in resp.read()
        for path in ("/shards", "/graph", "/shards/alice/ops", "/info"):
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 404, path
    finally:
        conn.close()


def test_a_trickled_body_times_out_with_408(tmp_path_factory, pki):
    import socket

    n = Node("impatient", tmp_path_factory.mktemp("slow"), pki)
    n.start(NOOND_TIMEOUT="0.3")
    try:
        ctx = n.context("tricky")
        with (
            socket.create_connection((n.host, n.port), timeout=10) as raw,
            ctx.wrap_socket(raw) as tls,
        ):
            tls.sendall(
                b"POST /shards/tricky/ops?after=0 HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: 1000\r\n\r\n" + op_line("tricky", 1)[:50]
            )
            answer = tls.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        assert b'"code":"timeout"' in answer
        assert not (n.dir / "tricky.jsonl").exists()
    finally:
        n.stop()


def test_a_metrics_certificate_reaches_metrics_and_health_only(node, pki, tmp_path):
    from noon import certs

    paths = certs.issue_node_cert(pki.root / "ca", "prometheus", tmp_path, role="metrics")
    files = (paths.cert, paths.key, paths.ca)
    for path in ("/metrics", "/health"):
        assert node.request("GET", path, files=files)[0] == 200, path
    for method, path in (
        ("GET", "/info"),
        ("GET", "/shards"),
        ("GET", "/peers"),
        ("GET", "/graph"),
        ("GET", "/shards/alice/ops"),
        ("POST", "/shards/prometheus/ops?after=0"),
    ):
        status, _, raw = node.request(
            method, path, body(node, "prometheus", 1) if method == "POST" else None, files=files
        )
        assert status == 403 and "metrics certificate" in error_of(raw)["error"], path
    assert not (node.dir / "prometheus.jsonl").exists()
    # Never a member: a daemon refuses to run with it.
    with pytest.raises(certs.CertError, match="not a node certificate"):
        certs.server_ssl_context(*files)
