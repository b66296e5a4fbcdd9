"""A CA and two machines' certificates, new for each test."""

from __future__ import annotations

from pathlib import Path

import pytest

from noon import certs
from noon.certs import init_ca, issue_node_cert


@pytest.fixture
def ca(tmp_path: Path) -> certs.CaPaths:
    return init_ca(tmp_path / "ca")


@pytest.fixture
def node_a(ca: certs.CaPaths, tmp_path: Path) -> certs.NodePaths:
    return issue_node_cert(ca.dir, "node-a", tmp_path / "a")


@pytest.fixture
def node_b(ca: certs.CaPaths, tmp_path: Path) -> certs.NodePaths:
    return issue_node_cert(ca.dir, "node-b", tmp_path / "b")
