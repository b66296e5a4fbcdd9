"""The operator commands (``noon status``, ``doctor``, ...) as a person runs them: an
environment naming one store and its daemon, a command in a fresh process, its JSON, and the
doctor's findings."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.harness.mesh import ROOT, free_port, noon_command


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
