"""A real PostgreSQL server for a test: ``initdb`` and ``pg_ctl`` into a temporary directory,
listening on a free loopback port (and a unix socket in the same directory), stopped and removed
afterwards. Skips with the reason when the server binaries (Debian: ``postgresql``) are absent.

PostgreSQL refuses to run as root; under root (CI) the server runs as the ``postgres`` user the
Debian package creates, in a directory that user owns.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.harness.mesh import free_port

START_TIMEOUT_S = 60
SUPERUSER = "noon"


def server_binaries() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb, or the one on PATH."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _as_server_user() -> tuple[list[str], int | None, int | None]:
    """The command prefix and ids to run the server with (nothing to change unless root)."""
    if os.geteuid() != 0:
        return [], None, None
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root and there is no 'postgres' user to run PostgreSQL as")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is missing to drop to 'postgres'")
    prefix = [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"]
    return prefix, user.pw_uid, user.pw_gid


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield the URL of a fresh server's ``postgres`` database (trust auth on loopback)."""
    bindir = server_binaries()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found (Debian: apt-get install postgresql)")
    prefix, uid, gid = _as_server_user()
    base = Path(tempfile.mkdtemp(prefix="noon-pg-"))
    if uid is not None and gid is not None:
        os.chown(base, uid, gid)
    data, log = base / "data", base / "server.log"
    port = free_port()

    def run(*argv: str) -> None:
        done = subprocess.run(
            [*prefix, *argv],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S + 30,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            server_log = log.read_text(errors="replace") if log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed: {done.stderr}{done.stdout}\n{server_log}")

    try:
        run(
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--no-sync",
            "--encoding=UTF8",
            "--locale=C",
        )
        options = f"-k {base} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "-t",
            str(START_TIMEOUT_S), "start")  # fmt: skip
        try:
            yield f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres"
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(base, ignore_errors=True)
