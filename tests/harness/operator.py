"""The operator commands (``noon status``, ``doctor``, ...) as a person runs them: an
environment naming one store and its daemon, a command in a fresh process, its JSON, and the
doctor's findings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.store import Store
from tests.harness.mesh import ROOT, Pki, free_port, noon_command


def cli_env(
    d: Path, node: str, files: tuple[Path, Path, Path] | None = None, listen: str | None = None
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOON_", "NOOND_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        NOON_DIR=str(d),
        NOON_NODE_ID=node,
        NOON_FSYNC="false",
        NOOND_LISTEN=listen or f"127.0.0.1:{free_port()}",
    )
    if files is not None:
        env.update(
            NOOND_TLS_CERT=str(files[0]), NOOND_TLS_KEY=str(files[1]), NOOND_TLS_CA=str(files[2])
        )
    return env


def run(command: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return noon_command(command, *args, env=env)


def as_json(out: subprocess.CompletedProcess[str]) -> Any:
    assert out.stdout.strip(), out.stderr
    return json.loads(out.stdout)


def doctor(env: dict[str, str], *extra: str) -> tuple[int, list[dict[str, str]]]:
    out = run("doctor", "--json", *extra, env=env)
    report = as_json(out)
    assert report["healthy"] == (out.returncode == 0), out.stdout
    return out.returncode, report["findings"]


def problems(
    findings: list[dict[str, str]], check: str, level: str = "error"
) -> list[dict[str, str]]:
    found = [f for f in findings if f["check"] == check and f["level"] == level]
    for f in found:
        assert f["fix"], f"finding without a fix: {f}"
    return found


def noon_cli(*words: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``noon WORDS`` as a person runs it (through :func:`noon.cli.main` and its error
    handling)."""
    return subprocess.run(
        [sys.executable, "-m", "noon", *words],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def own_cert(pki: Pki, d: Path, node: str) -> None:
    """Put ``node``'s certificate where noond and the CLI look by default, readable by its
    owner only as ``noon certs issue`` writes it (else doctor rightly warns)."""
    (d / "certs").mkdir(mode=0o700, parents=True, exist_ok=True)
    for src in pki.node(node):
        shutil.copy(src, d / "certs" / src.name)
        (d / "certs" / src.name).chmod(0o600)


def write_op(
    d: Path, node: str, key: tuple[str, ...], val: dict[str, Any] | None, client: str = "cli"
) -> None:
    """One op (``val`` None: a delete) by ``node`` into the store at ``d``, as one call of
    ``client``."""
    Store(Settings(dir=d, node_id=node, fsync=False)).write(
        lambda fold: [Draft(key, val)], client=client
    )
