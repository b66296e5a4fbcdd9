"""Hostile HTTP against a real daemon: random methods, paths (node-id tricks), query
parameters, headers and bodies on every route, slow clients, compressed bombs and
certificate/header identity mismatches. Every answer is a known status with a clear JSON
error, the daemon keeps serving, and nothing is stored but valid pushes of the caller's own
shard."""

from __future__ import annotations

import gzip
import json
import socket
import ssl
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noon.core.ops import encode
from tests.harness.mesh import Node, Pki, wait_until
from tests.harness.signed import body, signed

pytestmark = pytest.mark.integration

MAX_BODY = 65536
ROUTES = [
    "/health",
    "/info",
    "/status",
    "/peers",
    "/membership",
    "/shards",
    "/shards/digest",
    "/shards/{node}/ops",
    "/graph",
    "/metrics",
]
CALLERS = ["alice", "bob"]
PUSHERS = ("alice", "erin")
"""The nodes whose valid pushes the target must store: it knows their signing certificates."""
ALLOWED = {200, 400, 403, 404, 405, 408, 409, 413, 415}


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[Node]:
    n = Node("target", tmp_path_factory.mktemp("fuzz"), pki)
    pki.know_signers(n.dir, *PUSHERS)
    n.start(NOOND_MAX_BODY=str(MAX_BODY), NOOND_TIMEOUT="1")
    yield n
    n.stop()


def op_line(node: str, seq: int, val: dict[str, Any] | None = None) -> bytes:
    return encode(
        node=node,
        seq=seq,
        hlc=(1_700_000_000_000 << 16) + seq,
        el=("content", "default", f"{node}-{seq}"),
        val=val if val is not None else {"text": "t"},
    )


tricky_ids = st.sampled_from(
    [
        "alice",
        "bob",
        "target",
        "..",
        ".",
        "%2e%2e",
        "..%2F..%2Fetc",
        "a%2Fb",
        "a..b",
        "%00",
        "a%00b",
        "-a",
        "a" * 64,
        "a" * 65,
        "%C3%A9",
        "%FF",
        "alice.jsonl",
        "alice-import",
        "",
        "CON",
        "a%20b",
        "%20",
    ]
)
segments = (
    tricky_ids
    | st.sampled_from(["shards", "ops", "digest", "graph", "info", "%2E"])
    | st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8).map(
        lambda s: urllib.parse.quote(s, safe="")
    )
)


@st.composite
def paths(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        path = draw(st.sampled_from(ROUTES)).replace("{node}", draw(tricky_ids))
    else:
        path = "/" + "/".join(draw(st.lists(segments, min_size=0, max_size=4)))
    params = draw(
        st.dictionaries(
            st.sampled_from(["after", "limit", "check", "x", "after[]"]),
            st.sampled_from(
                [
                    "0",
                    "1",
                    "-1",
                    "abc",
                    "9" * 30,
                    "2.5",
                    "",
                    "0x10",
                    "00000000000000001",
                    "ffffffffffffffff",
                    "zzzzzzzzzzzzzzzz",
                    "1e3",
                    "%00",
                ]
            ),
            max_size=3,
        )
    )
    if params:
        path += "?" + "&".join(f"{k}={v}" for k, v in params.items())
    return path


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def bodies(draw: st.DrawFn, caller: str) -> bytes:
    kind = draw(st.sampled_from(["json", "lines", "nested", "huge", "ops", "mixed", "empty"]))
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    if kind == "lines":
        return (
            b"\n".join(
                json.dumps(draw(json_values)).encode() for _ in range(draw(st.integers(1, 5)))
            )
            + b"\n"
        )
    if kind == "nested":
        depth = draw(st.integers(10, 5000))
        return (
            op_line(caller, 1, {"text": "x"})[:-1]
            + b',"deep":'
            + b"[" * depth
            + b"]" * depth
            + b"}\n"
        )
    if kind == "huge":
        return b"x" * (MAX_BODY + draw(st.integers(1, 5000)))
    if kind == "ops":
        author = draw(st.sampled_from([caller, "target", "someone"]))
        seqs = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
        return b"".join(op_line(author, s) + b"\n" for s in seqs)
    if kind == "mixed":
        return op_line(caller, 1) + b"\n" + draw(st.binary(max_size=200)) + b"\n"
    return b""


def answer_is_clear(status: int, headers: dict[str, str], raw: bytes) -> None:
    assert status in ALLOWED, (status, raw[:300])
    if status >= 400:
        err = json.loads(raw)
        assert isinstance(err["error"], str) and err["error"]
        assert isinstance(err["code"], str)


def stored(node: Node) -> set[str]:
    return {p.name for p in node.dir.glob("*.jsonl")}


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_requests_get_clear_answers_and_store_nothing_bad(node: Node, data) -> None:
    caller = data.draw(st.sampled_from(CALLERS))
    method = data.draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"]))
    path = data.draw(paths())
    headers = data.draw(
        st.dictionaries(
            st.sampled_from(
                [
                    "X-Noon-Protocol",
                    "X-Noon-Node",
                    "X-Noon-Address",
                    "Content-Type",
                    "Accept-Encoding",
                ]
            ),
            st.sampled_from(
                [
                    "1",
                    "2",
                    "alice",
                    "bob",
                    "target",
                    "..",
                    "gzip",
                    "zzz",
                    "127.0.0.1:1",
                    "[::1]:99999",
                    "a" * 300,
                ]
            ),
            max_size=3,
        )
    )
    body = data.draw(bodies(caller)) if method in ("POST", "PUT", "PATCH") else None
    before = stored(node)
    try:
        status, got_headers, raw = node.request(method, path, body, as_node=caller, headers=headers)
    except ConnectionError:  # the server may close while a too-large body is still sent
        assert body is not None and len(body) > MAX_BODY
    else:
        if method != "HEAD":
            answer_is_clear(status, got_headers, raw)
        assert status != 200 or method in ("GET", "HEAD", "POST")
        if method == "POST" and status == 200:
            assert path.startswith(f"/shards/{caller}/ops")
    # Only the caller's own shard may appear, and only through a successful push.
    assert stored(node) - before <= {f"{caller}.jsonl"}
    assert node.get("/health")[0] == 200


def test_a_compressed_bomb_is_refused_unread(node: Node) -> None:
    bomb = gzip.compress(b" " * (50 * MAX_BODY))
    assert len(bomb) < MAX_BODY
    try:
        status, _, raw = node.request(
            "POST",
            "/shards/carl/ops?after=0",
            bomb,
            as_node="carl",
            headers={"Content-Encoding": "gzip"},
        )
    except ConnectionError:
        status, raw = 413, b'{"error":"closed","code":"too_large"}'
    assert status in (413, 415), raw  # never inflated: refused for its coding or its size
    answer_is_clear(status, {}, raw)
    assert not (node.dir / "carl.jsonl").exists()
    assert node.get("/health")[0] == 200


def test_deeply_nested_ops_in_a_push_are_refused(node: Node) -> None:
    line = op_line("dora", 1)[:-1] + b',"deep":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    status, _, raw = node.request(
        "POST", "/shards/dora/ops?after=0", line[: MAX_BODY - 10], as_node="dora"
    )
    assert status == 400 and json.loads(raw)["code"] == "invalid_ops"
    assert not (node.dir / "dora.jsonl").exists()


def test_the_certificate_not_the_header_says_who_pushes(node: Node, pki: Pki) -> None:
    # alice's certificate claiming to be bob in the header cannot push bob's shard ...
    status, _, raw = node.request(
        "POST",
        "/shards/bob/ops?after=0",
        op_line("bob", 1) + b"\n",
        as_node="alice",
        headers={"X-Noon-Node": "bob"},
    )
    assert status == 403 and json.loads(raw)["code"] == "forbidden"
    assert not (node.dir / "bob.jsonl").exists()
    # ... and whatever the header says, alice's push lands in alice's shard only.
    status, _, raw = node.request(
        "POST",
        "/shards/alice/ops?after=0",
        body(signed(pki, "alice", [op_line("alice", 1)])),
        as_node="alice",
        headers={"X-Noon-Node": "bob"},
    )
    assert status == 200, raw
    assert not (node.dir / "bob.jsonl").exists()


def test_a_certificate_whose_cn_is_not_a_node_id_is_refused(
    node: Node, pki: Pki, tmp_path: Path
) -> None:
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca_dir = pki.root / "ca"
    ca_key = serialization.load_pem_private_key((ca_dir / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    ca_cert = x509.load_pem_x509_certificate((ca_dir / "ca.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "../../etc")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )
    (tmp_path / "evil.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "evil.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    files = (tmp_path / "evil.crt", tmp_path / "evil.key", ca_dir / "ca.crt")
    before = stored(node)
    for method, path in (
        ("GET", "/shards"),
        ("POST", "/shards/..%2F..%2Fetc/ops?after=0"),
        ("POST", "/shards/etc/ops?after=0"),
    ):
        try:
            status, _, raw = node.request(
                method, path, op_line("etc", 1) + b"\n" if method == "POST" else None, files=files
            )
        except (ssl.SSLError, ConnectionError):
            continue
        assert status in (400, 403), (path, status, raw)
        answer_is_clear(status, {}, raw)
    assert stored(node) == before
    assert node.get("/health")[0] == 200


def test_slow_clients_do_not_starve_the_others(node: Node, pki: Pki) -> None:
    """Forty clients open TLS connections and send half a request, then wait; the daemon
    still answers everyone else at once, and drops the stalled ones after its timeout."""
    held: list[ssl.SSLSocket] = []
    try:
        for i in range(40):
            raw = socket.create_connection((node.host, node.port), timeout=10)
            tls = node.context("alice").wrap_socket(raw)
            tls.sendall(
                b"POST /shards/alice/ops?after=0 HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: 5000\r\nX-Slow: " + str(i).encode()
            )
            held.append(tls)
        start = time.monotonic()
        assert node.get("/health")[0] == 200
        status, _, answer = node.request(
            "POST",
            "/shards/erin/ops?after=0",
            body(signed(pki, "erin", [op_line("erin", 1)])),
            as_node="erin",
        )
        assert status == 200, answer
        assert time.monotonic() - start < 5
    finally:
        for tls in held:
            tls.close()
    wait_until(lambda: node.get("/health")[0] == 200)
