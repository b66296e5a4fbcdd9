"""noon's version read from the header of its installed metadata is the one the whole
metadata gives (the version ``noon --version`` prints and ``initialize`` answers with)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from noon.package import installed_version
from tests.harness.mesh import ROOT, subprocess_env


def test_the_header_gives_the_version_the_whole_metadata_gives() -> None:
    assert installed_version() == importlib.metadata.version("noon")


@pytest.mark.integration
def test_noon_version_prints_it() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "noon", "--version"],
        env=subprocess_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == f"noon {importlib.metadata.version('noon')}\n"
