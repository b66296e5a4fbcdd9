"""noond's start is mostly imports (a profile of one start: 99% of its CPU before listening is
importing; building the node and opening the listener take milliseconds), and a restarted
daemon on a loaded machine must listen soon: what it does not need is not imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.mesh import ROOT, Node, Pki, subprocess_env, wait_until

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


def test_a_started_daemon_sets_what_it_loaded_out_of_the_collectors_reach(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    """What noond's imports and start leave lives as long as the process; a full garbage
    collection walking it again cost a lone write tens of milliseconds (noond/__main__.py)."""
    a = Node("a", tmp_path, pki)
    spawn.append(a)
    a.start()
    frozen = wait_until(
        lambda: a.metric("noond_gc_frozen_objects"), what="noond to freeze its loaded objects"
    )
    assert frozen > 10_000  # its modules and classes: the imports alone leave far more
