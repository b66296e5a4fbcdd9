"""What deploy/ and systemd/ ship, checked by the tools that consume them: systemd-analyze on the
units, promtool on the scrape config, the alert rules (with their unit tests) and a real noond's
metrics, and a real Prometheus server scraping a real noond, queried through its HTTP API (the
dashboard's queries included). Each test skips, saying why, when its tool is not installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.mesh import ROOT, Node, Pki, free_port, wait_until

pytestmark = pytest.mark.integration

DEPLOY = ROOT / "deploy"
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool missing (Debian: apt-get install prometheus)"
)


@pytest.fixture
def mesh(tmp_path: Path, pki: Pki) -> Iterator[list[tuple[Node, str]]]:
    """Two real noonds replicating over mTLS, each with its plaintext metrics listener; yields
    (node, metrics address) pairs."""
    laptop, desktop = Node("laptop", tmp_path, pki), Node("desktop", tmp_path, pki)
    laptop.write(("m1", "one"), ("m2", "two"))
    listeners = [f"127.0.0.1:{free_port()}" for _ in range(2)]
    for node, peer, metrics in ((laptop, desktop, listeners[0]), (desktop, laptop, listeners[1])):
        node.start([peer], wait=False, NOOND_METRICS_LISTEN=metrics)
    try:
        for node in (laptop, desktop):
            node.wait_healthy()
        yield [(laptop, listeners[0]), (desktop, listeners[1])]
    finally:
        laptop.stop()
        desktop.stop()


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.read()


# -- systemd ------------------------------------------------------------------------------


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze missing")
@pytest.mark.parametrize("unit", ["noond.service", "noond-user.service"])
def test_systemd_units_verify(tmp_path: Path, unit: str):
    noond = Path(sys.executable).with_name("noond")
    if not noond.exists():
        pytest.skip(f"no noond entry point next to {sys.executable}")
    text = (ROOT / "systemd" / unit).read_text()
    assert "EnvironmentFile=" in text and "Restart=on-failure" in text
    copy = tmp_path / unit
    copy.write_text(re.sub(r"(?m)^ExecStart=.*$", f"ExecStart={noond}", text))
    assert SYSTEMD_ANALYZE is not None
    out = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", str(copy)], capture_output=True, text=True, timeout=60
    )
    # verify exits 0 on many problems it only prints: any line about our file is a failure.
    about = [ln for ln in (out.stdout + out.stderr).splitlines() if str(copy) in ln]
    assert out.returncode == 0 and not about, out.stdout + out.stderr


def test_both_units_give_noond_room_for_its_connection_budget():
    for unit in ("noond.service", "noond-user.service"):
        limit = re.search(r"(?m)^LimitNOFILE=(\d+)$", (ROOT / "systemd" / unit).read_text())
        assert limit and int(limit.group(1)) >= 4096, unit


def test_the_system_unit_is_sandboxed():
    text = (ROOT / "systemd" / "noond.service").read_text()
    for option in (
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=",
        "SystemCallFilter=@system-service",
    ):
        assert option in text


# -- promtool ----------------------------------------------------------------------------


@needs_promtool
def test_promtool_accepts_the_scrape_config_and_rules():
    assert PROMTOOL is not None
    for args in (
        ["check", "config", "prometheus.yml"],
        ["check", "rules", "alerts.yml"],
        ["test", "rules", "alerts_test.yml"],
    ):
        out = subprocess.run(
            [PROMTOOL, *args], cwd=DEPLOY / "prometheus", capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, f"promtool {' '.join(args)}:\n{out.stdout}{out.stderr}"


@needs_promtool
def test_noond_metrics_pass_promtool_lint(mesh: list[tuple[Node, str]]):
    _, metrics = mesh[0]
    # Labelled series exist once there is a peer to label them with.
    body = wait_until(
        lambda: (
            lambda b: (
                b
                if b"noond_peer_missing_ops{" in b and b"noond_peer_clock_skew_seconds{" in b
                else None
            )
        )(fetch(f"http://{metrics}/metrics")),
        what="peer metrics",
    )
    for name in (
        "noond_certificate_expiry_timestamp_seconds",
        "noond_frozen_elements",
        "noond_forks_detected_total",
        "noond_own_shard_seq",
    ):
        assert name.encode() in body
    assert PROMTOOL is not None
    out = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=body, capture_output=True, timeout=60
    )
    assert out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(), (
        out.stdout + out.stderr
    )


# -- a real Prometheus ----------------------------------------------------------------------


class Prometheus:
    def __init__(self, root: Path, targets: list[str]) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.address = f"127.0.0.1:{free_port()}"
        config = root / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {DEPLOY / 'prometheus' / 'alerts.yml'}\n"
            "scrape_configs:\n  - job_name: noond\n"
            f"    static_configs:\n      - targets: {json.dumps(targets)}\n"
        )
        self.log = root / "prometheus.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    str(PROMETHEUS),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={root / 'data'}",
                    f"--web.listen-address={self.address}",
                ],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )

    def api(self, path: str, **params: str) -> Any:
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited:\n{self.log.read_text()[-3000:]}")
        query = urllib.parse.urlencode(params)
        body = json.loads(fetch(f"http://{self.address}/api/v1/{path}?{query}"))
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return self.api("query", query=expr)["result"]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.mark.skipif(
    PROMETHEUS is None, reason="prometheus missing (Debian: apt-get install prometheus)"
)
def test_a_real_prometheus_scrapes_noond(tmp_path: Path, mesh: list[tuple[Node, str]]):
    (laptop, laptop_metrics), (_, desktop_metrics) = mesh
    prom = Prometheus(tmp_path / "prom", [laptop_metrics, desktop_metrics])
    try:
        wait_until(
            lambda: len(prom.query('up{job="noond"} == 1')) == 2,
            what="prometheus to scrape both noonds",
            timeout=30,
        )
        info = {r["metric"]["node"]: r["metric"]["instance"] for r in prom.query("noond_info")}
        assert info == {"laptop": laptop_metrics, "desktop": desktop_metrics}
        seq = prom.query(f'noond_own_shard_seq{{instance="{laptop_metrics}"}}')
        assert float(seq[0]["value"][1]) == 2  # the two ops written before the start
        # Replication seen through Prometheus: each side's lag series appears and drains to 0.
        wait_until(
            lambda: (
                sorted(
                    r["metric"]["peer"]
                    for r in prom.query("max by (peer) (noond_peer_missing_ops) == 0")
                )
                == ["desktop", "laptop"]
            ),
            what="both peers caught up, as Prometheus sees it",
            timeout=30,
        )
        skew = prom.query("abs(noond_peer_clock_skew_seconds) < 2")
        assert len(skew) == 2  # one clock, so no skew beyond the Date header's resolution
        expiry = prom.query(
            'noond_certificate_expiry_timestamp_seconds{certificate="node"} - time() > 86400'
        )
        assert len(expiry) == 2
        laptop.write(("m3", "three"))
        wait_until(
            lambda: prom.query(f'noond_own_shard_seq{{instance="{laptop_metrics}"}} == 3'),
            what="a new write to show up in Prometheus",
            timeout=30,
        )
        names = set(prom.api("label/__name__/values"))
        assert {
            "noond_rounds_total",
            "noond_frozen_elements",
            "noond_forks_detected_total",
            "noond_peers",
        } <= names

        rules = {r["name"] for g in prom.api("rules")["groups"] for r in g["rules"]}
        assert {
            "NoondForkDetected",
            "NoondClockSkew",
            "NoondCertificateExpiring",
            "NoondReplicationLag",
            "NoondPeerDown",
            "NoondFrozenTombstonesGrowing",
        } <= rules

        # Every family noond declares (also labelled ones with no series yet).
        families = set(
            re.findall(
                r"(?m)^# TYPE (noond_\w+) ", fetch(f"http://{laptop_metrics}/metrics").decode()
            )
        )
        dashboard = json.loads((DEPLOY / "grafana" / "noon.json").read_text())
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                expr = target["expr"].replace("$instance", ".*")
                for metric in re.findall(r"\bnoond_\w+", expr):
                    family = re.sub(r"_bucket$", "", metric)
                    assert family in families, (
                        f"panel {panel['title']!r} uses {metric}, which noond does not export"
                    )
                prom.query(expr)  # Prometheus accepts the query
    finally:
        prom.stop()


# -- logs ------------------------------------------------------------------------------------


def test_noond_logs_one_json_object_per_line_when_asked(tmp_path: Path, pki: Pki):
    node = Node("laptop", tmp_path, pki, env={"NOON_LOG_FORMAT": "json"})
    node.start()
    node.stop()
    lines = [ln for ln in node.log.read_text().splitlines() if ln.strip()]
    records = [json.loads(ln) for ln in lines]  # every line is one JSON object
    assert all({"time", "level", "logger", "message"} <= r.keys() for r in records)
    assert any(r["logger"] == "noond" and "listening on" in r["message"] for r in records)
    assert not any("BEGIN" in ln for ln in lines)  # no key or certificate material


def test_a_bad_log_format_stops_noond_with_the_variable_name(tmp_path: Path, pki: Pki):
    cert, key, ca = pki.node("laptop")
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "NOON_DIR": str(tmp_path),
        "NOON_NODE_ID": "laptop",
        "NOON_LOG_FORMAT": "xml",
        "NOOND_TLS_CERT": str(cert),
        "NOOND_TLS_KEY": str(key),
        "NOOND_TLS_CA": str(ca),
        "NOOND_LISTEN": f"127.0.0.1:{free_port()}",
    }
    out = subprocess.run(
        [sys.executable, "-m", "noond"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "NOON_LOG_FORMAT" in out.stderr


def test_the_example_env_file_is_a_valid_daemon_configuration():
    """As shipped, and with every commented-out example setting switched on."""
    from noond.config import from_env

    env: dict[str, str] = {}
    optional: dict[str, str] = {}
    for line in (ROOT / "systemd" / "noond.env.example").read_text().splitlines():
        line = line.strip()
        commented = re.fullmatch(r"#(NOOND?_[A-Z_]+)=(\S+)", line)
        if commented:
            optional[commented.group(1)] = commented.group(2)
        elif line and not line.startswith("#"):
            name, sep, value = line.partition("=")
            assert sep and re.fullmatch(r"NOOND?_[A-Z_]+", name), line
            env[name] = value
    config = from_env(env)  # raises ConfigError naming the variable on any bad value
    assert config.node == env["NOON_NODE_ID"] and config.seeds
    full = from_env({**env, **optional})
    assert full.metrics_listen == optional["NOOND_METRICS_LISTEN"]
    assert optional["NOON_LOG_FORMAT"] in ("text", "json")
