"""Shared test settings: slow suites run only with NOON_SLOW=1; hypothesis profiles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.register_profile(
    "soak", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=3000
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("NOON_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow suite: run with NOON_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def noon_dir(tmp_path: Path) -> Path:
    d = tmp_path / "noon"
    d.mkdir()
    return d
