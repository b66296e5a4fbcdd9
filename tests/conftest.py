"""Shared test settings: slow suites run only with NOON_SLOW=1; hypothesis profiles (``fast``
for the developer's lane, ``soak`` for long hunts); every test starts with no noon setting in its
environment; a test outside the integration lane cannot start a process."""

from __future__ import annotations

import _posixsubprocess
import importlib
import os
import pkgutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

from tests.harness.mesh import Node, Pki

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.register_profile(
    "fast", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=15
)
settings.register_profile(
    "soak", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=3000
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """pytest rewrites the asserts of every package that ships a pytest plugin, hypothesis among
    them, parsing each module with ``ast`` as it is first imported, and hypothesis imports some
    of its internals only when a test first needs them (``regex``, ``random``, ``optimiser``). On
    CPython 3.11 such a parse fails now and then with "SystemError: AST constructor recursion
    depth mismatch" (python/cpython#106905, pytest-dev/pytest#10763: the depth count is the
    interpreter's, so another parse running in the middle of one, from another thread or a
    finalizer, unbalances it). The fast lane failed so three times today, in tests that happened to
    import one. Imported here, they are parsed once collected, before any test has left garbage
    behind (not at this file's import: ``regex`` reads hypothesis's Unicode tables as it loads,
    which hypothesis warns against while plugins start)."""
    for package in ("hypothesis.internal", "hypothesis.strategies._internal"):
        path = importlib.import_module(package).__path__
        for module in pkgutil.walk_packages(path, package + "."):
            importlib.import_module(module.name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("NOON_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow suite: run with NOON_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


TEST_CONTROLS = frozenset(
    {
        "NOON_SLOW",
        "NOON_SEED",
        "NOON_SOAK_SECONDS",
        "NOON_MODEL_EXAMPLES",
        "NOON_NEMESIS_NODES",
        "NOON_NEMESIS_DISK_DAMAGE",
        "NOON_NEMESIS_RELAY_COMPACTION",
        "NOON_SCREENSHOTS",
    }
)
"""Variables that steer the suite itself, not noon: kept."""
LEGACY_AND_OWN = ("NOON_", "NOOND_", "NOONIEN_", "NOONIEND_")
"""noon's settings, and server-noonien's, which noon refuses to start beside."""


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own NOON_* and NOOND_* settings (a real NOON_DIR, a node id, a token), or
    server-noonien's, must never reach a test, nor a process a test starts."""
    for name in list(os.environ):
        if name.startswith(LEGACY_AND_OWN) and name not in TEST_CONTROLS:
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A private CA and node certificates for real-daemon tests (issued on demand)."""
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def spawn() -> Iterator[list[Node]]:
    """Daemons a test starts; every one is stopped afterwards."""
    nodes: list[Node] = []
    yield nodes
    for n in nodes:
        n.stop()


@pytest.fixture
def noon_dir(tmp_path: Path) -> Path:
    d = tmp_path / "noon"
    d.mkdir()
    return d


class InProcessOnly(RuntimeError):
    """A test outside the integration lane tried to start a process."""


@pytest.fixture(autouse=True)
def in_process_unless_integration(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lanes are the ``integration`` marker (docs/decisions/0006): a test without it
    runs in-process, so the fast lane starts no process, daemon or browser. Every way Python
    starts one (``subprocess`` and ``asyncio``'s subprocesses through ``fork_exec`` or
    ``posix_spawn``, ``multiprocessing`` through ``fork_exec`` or ``fork``) refuses here, naming
    the marker; loopback sockets served in-process stay allowed."""
    if request.node.get_closest_marker("integration") is not None:
        return
    where = request.node.nodeid

    def refuse(*_args: object, **_kwargs: object) -> NoReturn:
        raise InProcessOnly(
            f"{where} starts a process: mark it @pytest.mark.integration (the fast lane runs "
            "in-process only: docs/decisions/0006-lanes-by-marker.md)"
        )

    monkeypatch.setattr(_posixsubprocess, "fork_exec", refuse)
    if hasattr(subprocess, "_fork_exec"):  # subprocess holds its own reference since 3.11.x
        monkeypatch.setattr(subprocess, "_fork_exec", refuse)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)
