"""noond's start is mostly imports (a profile of one start: 99% of its CPU before listening is
importing; building the node and opening the listener take milliseconds), and a restarted
daemon on a loaded machine must listen soon: what it does not need is not imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration  # a fresh interpreter: what one start imports


def test_the_daemon_imports_no_dns_client_unless_dns_discovery_is_asked():
    probe = (
        "import sys\n"
        "import noond.daemon\n"
        "print(sorted(m for m in sys.modules if m == 'dns' or m.startswith('dns.'))[:3])\n"
        "from noond import srv\n"
        "print('dns.asyncresolver' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "True"]
