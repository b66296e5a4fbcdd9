"""Discovery: a fake ``tailscale`` on PATH printing recorded ``status --json`` output, a real
DNS server (dnsmasq) on loopback answering SRV records, and identity-checked admission."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness.mesh import Node, converged, free_port, wait_until

pytestmark = pytest.mark.integration

DATA = Path(__file__).parent / "data"


def members(node: Node) -> set[str]:
    return {p.node for p in node.peers().peers}


def port_free_on(port: int, *hosts: str) -> bool:
    for host in hosts:
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def test_tailscale_status_peers_become_members_after_proving_identity(spawn, tmp_path, pki):
    port = free_port()
    while not port_free_on(port, "127.0.0.1", "127.0.0.2"):
        port = free_port()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "tailscale"
    fake.write_text(
        "#!/bin/sh\n"
        f'[ "$1 $2" = "status --json" ] || {{ echo "unexpected args: $*" >&2; exit 2; }}\n'
        f"cat '{DATA / 'tailscale-status.json'}'\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    desktop = Node("desktop", tmp_path, pki, host="127.0.0.2", port=port)
    laptop = Node("laptop", tmp_path, pki, host="127.0.0.1", port=port)
    spawn += [desktop, laptop]
    desktop.start()
    laptop.start(NOOND_TAILSCALE="true", PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    wait_until(lambda: members(laptop) == {"desktop"}, what="laptop to admit desktop")
    # desktop learnt laptop from its inbound, identity-checked requests.
    wait_until(lambda: members(desktop) == {"laptop"}, what="desktop to admit laptop")
    laptop.write(("l", "from laptop"))
    desktop.write(("d", "from desktop"))
    wait_until(lambda: converged([laptop, desktop], expect=2))
    peers = laptop.peers()
    # The online peer where nothing answers stays a candidate; the offline one is not tried.
    candidates = {c.address for c in peers.candidates}
    assert f"127.0.0.4:{port}" in candidates
    assert f"127.0.0.3:{port}" not in candidates
    assert "printer-server" not in members(laptop)


def test_a_seed_whose_certificate_proves_another_identity_is_not_admitted(spawn, tmp_path, pki):
    b = Node("b", tmp_path, pki)
    a = Node("a", tmp_path, pki)
    spawn += [a, b]
    b.start()
    a.start([f"zed@{b.address}"])
    wait_until(lambda: a.metric("noond_rounds_total") >= 3, what="a few rounds")
    assert members(a) == set()
    assert "b" not in members(a) and "zed" not in members(a)
    assert not (a.dir / "b.jsonl").exists()


@pytest.fixture
def dns_server(tmp_path: Path) -> Iterator[Callable[[list[str]], int]]:
    """Starts dnsmasq on a free loopback port with the given records; returns the port."""
    exe = shutil.which("dnsmasq") or (
        "/usr/sbin/dnsmasq" if Path("/usr/sbin/dnsmasq").exists() else None
    )
    if exe is None:
        pytest.skip("dnsmasq is not installed (apt-get install -y dnsmasq-base)")
    procs: list[subprocess.Popen[bytes]] = []

    def serve(records: list[str]) -> int:
        port = free_port()
        while not udp_free(port):
            port = free_port()
        log = tmp_path / "dnsmasq.log"
        with open(log, "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        exe,
                        "--keep-in-foreground",
                        "--no-resolv",
                        "--no-hosts",
                        "--conf-file=/dev/null",
                        "--pid-file",
                        f"--port={port}",
                        "--listen-address=127.0.0.1",
                        "--bind-interfaces",
                        "--log-facility=-",
                        *records,
                    ],
                    stdout=out,
                    stderr=out,
                    stdin=subprocess.DEVNULL,
                )
            )
        return port

    yield serve
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def udp_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        try:
            u.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_dns_srv_records_from_a_real_dns_server(spawn, tmp_path, pki, dns_server):
    b, c = Node("b", tmp_path, pki), Node("c", tmp_path, pki)
    a = Node("a", tmp_path, pki)
    spawn += [a, b, c]
    port = dns_server(
        [
            f"--srv-host=_noond._tcp.noon.test,b.noon.test,{b.port},0,10",
            f"--srv-host=_noond._tcp.noon.test,c.noon.test,{c.port},0,10",
            "--host-record=b.noon.test,127.0.0.1",
            "--host-record=c.noon.test,127.0.0.1",
        ]
    )
    b.start()
    c.start()
    a.start(NOOND_DNS_SRV="noon.test", NOOND_DNS_NAMESERVER=f"127.0.0.1:{port}")
    wait_until(lambda: members(a) == {"b", "c"}, what="a to admit the SRV targets")
    b.write(("x", "from b"))
    c.write(("y", "from c"))
    a.write(("z", "from a"))
    wait_until(lambda: converged([a, b, c], expect=3))
