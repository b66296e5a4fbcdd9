"""The lanes are the ``integration`` marker, and tests/conftest.py holds the fast lane to
running in-process: here, every way Python starts a process is refused in a test without the
marker, with a message naming it, and allowed in one with it."""

from __future__ import annotations

import asyncio
import multiprocessing
import subprocess
import sys

import pytest

REFUSED = r"starts a process: mark it @pytest\.mark\.integration"


def test_a_fast_lane_test_cannot_start_a_process() -> None:
    with pytest.raises(RuntimeError, match=REFUSED):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    with pytest.raises(RuntimeError, match=REFUSED):
        asyncio.run(asyncio.create_subprocess_exec(sys.executable, "-c", "pass"))
    for method in ("fork", "spawn", "forkserver"):
        child = multiprocessing.get_context(method).Process(target=print)  # type: ignore[attr-defined]
        with pytest.raises(RuntimeError, match=REFUSED):
            child.start()


@pytest.mark.integration
def test_an_integration_test_starts_processes() -> None:
    done = subprocess.run([sys.executable, "-c", "print('started')"], capture_output=True)
    assert done.returncode == 0 and done.stdout == b"started\n"
