"""The SDK imported the lean way (noon.mcp.sdk_import) is still the whole SDK: a name only a
package ``__init__`` defines loads it in place, and a model or type adapter defined with its
validator deferred validates and refuses as the SDK's own does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.harness.mcp import INITIALIZE, POST_HEADERS

pytestmark = pytest.mark.integration

PROBE = """
import sys
import noon.mcp
import mcp
import mcp.server
print("mcp.client" in sys.modules)
from mcp import Client, ClientSession, types
from mcp.server import MCPServer, Server
import mcp.server.lowlevel.server as lowlevel
assert Server is lowlevel.Server and types is sys.modules["mcp.types"]
assert mcp.server is sys.modules["mcp.server"] and mcp.Client is Client
print("mcp.client" in sys.modules, "mcp.server.mcpserver" in sys.modules)
req = types.CallToolRequest.model_validate(
    {"method": "tools/call", "params": {"name": "read_graph", "arguments": {}}}
)
print(req.params.name)
try:
    types.CallToolRequestParams.model_validate({"arguments": {}})
except Exception as exc:
    print(type(exc).__name__, exc.errors()[0]["loc"])
import typing
import mcp_types
from pydantic import TypeAdapter
adapter = mcp_types.client_request_adapter
import gc
frozen = gc.get_freeze_count() > 0
print(adapter.pydantic_complete, hasattr(typing, "compile"), gc.isenabled(), frozen)
eager = TypeAdapter(mcp_types.ClientRequest)  # after the import: built at once, as before it
ping = {"method": "ping"}
print(eager.pydantic_complete, adapter.validate_python(ping) == eager.validate_python(ping))
print(adapter.json_schema() == eager.json_schema())
"""


def test_the_deferred_packages_and_models_behave_as_the_sdk_imported_whole() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split("\n")[:7] == [
        "False",  # noon.mcp loaded the server side without the client
        "True True",  # asking the packages for their own names loaded them
        "read_graph",
        "ValidationError ('name',)",
        # the SDK's adapters wait for first use; typing and the collector are as before, the
        # SDK's objects frozen out of its reach
        "False False True True",
        "True True",
        "True",  # and then build the same validator as one built at once
    ]


HTTP_SIDE = """
import sys
import noon.mcp
from noon.mcp import sdk_import
low = sys.modules[sdk_import.HTTP_SIDE_USER]
print(sorted(m for m in sdk_import.HTTP_SIDE if m in sys.modules))
stood_in = {k for k, v in vars(low).items() if isinstance(v, sdk_import.Pending)}
# every stand-in is in the low-level server's namespace, none anywhere else
elsewhere = [
    (name, k)
    for name, module in list(sys.modules.items())
    if module is not low
    for k, v in list(getattr(module, "__dict__", {}).items())
    if isinstance(v, (sdk_import.Pending, sdk_import._StandIn))
]
print(elsewhere)
# the code that names a stand-in is the one method the functions loading first cover
def codes(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            yield from codes(const)
import ast, inspect
tree = compile(inspect.getsource(low), low.__file__, "exec")
users = {c.co_qualname: sorted(stood_in & set(c.co_names)) for c in codes(tree)}
print(sorted(name for name, used in users.items() if used and name != "<module>"))
print(users["Server"], sorted(f"{o.__name__}.{n}" for o, n, _ in sdk_import._LOADING_FIRST))
# what the module binds from the HTTP side, read from its source, is what is stood in for
bound = {
    alias.asname or alias.name
    for node in ast.parse(inspect.getsource(low)).body
    if isinstance(node, ast.ImportFrom) and node.module in sdk_import.HTTP_SIDE
    for alias in node.names
}
print(bound == stood_in, len(stood_in))

import anyio, httpx2, json, tempfile
from pathlib import Path
from noon.config import Settings
from noon.mcp.server import create_server
from noon.store.store import Store
settings = Settings.from_env({}, dir=Path(tempfile.mkdtemp()), node_id="probe", fsync=False)
server = create_server(Store(settings), settings, {"kg"})
app = server.streamable_http_app()  # the SDK's own app, its defaults
import mcp.server.streamable_http_manager as manager
import mcp.server.transport_security as security
sessions = server.session_manager
print(
    (sessions.max_sessions, sessions.session_idle_timeout, sessions.max_request_body_size)
    == (manager.DEFAULT_MAX_SESSIONS, manager.DEFAULT_SESSION_IDLE_TIMEOUT,
        security.DEFAULT_MAX_REQUEST_BODY_SIZE),
    [k for k, v in vars(low).items() if isinstance(v, sdk_import.Pending)],
    low.Server.streamable_http_app.__kwdefaults__["max_sessions"] == manager.DEFAULT_MAX_SESSIONS,
)

async def ask():
    transport = httpx2.ASGITransport(app=app)
    async with sessions.run(), httpx2.AsyncClient(
        transport=transport, base_url="http://127.0.0.1:8000"
    ) as client:
        r = await client.post("/mcp", json={INITIALIZE}, headers={HEADERS})
        data = [l for l in r.text.splitlines() if l.startswith("data:")]
        body = json.loads(data[0][5:]) if data else r.json()
        print(r.status_code, body["result"]["serverInfo"]["name"], body["id"])

anyio.run(ask)
"""


def test_the_http_side_stands_in_until_a_streamable_http_app_is_built() -> None:
    """The names the SDK's low-level server binds from its HTTP side are stand-ins after the lean
    import, used by one method only (an SDK whose other code uses them fails here), and that
    method builds the SDK's own streamable-HTTP app, with its own defaults, which answers."""
    code = HTTP_SIDE.replace("{INITIALIZE}", repr(INITIALIZE)).replace(
        "{HEADERS}", repr(POST_HEADERS)
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "[]",  # none of the HTTP side is loaded
        "[]",  # no stand-in outside the low-level server
        # the code that names them: one method, and the class body defining its defaults
        "['Server', 'Server.streamable_http_app']",
        "['DEFAULT_MAX_REQUEST_BODY_SIZE', 'DEFAULT_MAX_SESSIONS', 'DEFAULT_SESSION_IDLE_TIMEOUT']"
        " ['Server.streamable_http_app']",
    ]
    assert lines[4].startswith("True ")  # every name bound from the HTTP side stood in for
    assert lines[5:] == ["True [] True", "200 noon 1"]


FROZEN_FIRST = """
import gc
enabled_with = []
enable = gc.enable
gc.enable = lambda: (enabled_with.append(gc.get_freeze_count()), enable())
import noon.mcp
print(len(enabled_with), enabled_with[0] > 10_000, gc.isenabled())
"""


def test_the_import_is_frozen_before_the_collector_runs_again() -> None:
    """The collector, paused during the import, is enabled again only once what the import left
    is frozen: the first collection after it would otherwise walk all of it as young objects."""
    done = subprocess.run(
        [sys.executable, "-c", FROZEN_FIRST], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["1", "True", "True"]


REBUILDS = """
import json, sys
if sys.argv[1] == "lean":
    import noon.mcp
import mcp_types._types as t
from pydantic import BaseModel
waiting = [t.Request, t.Notification, t.PaginatedRequest, t.InputResponseRequestParams,
           t.ReadResourceRequestParams, t.GetPromptRequestParams, t.CallToolRequestParams]
print(json.dumps([m.__pydantic_complete__ for m in waiting]))
print(json.dumps("model_rebuild" in vars(BaseModel) and not BaseModel.model_rebuild.__func__
                 .__module__.startswith("noon")))
asked = {"name": "x", "uri": "u", "inputResponses": {"a": {"roots": [{"uri": "file:///r"}]}},
         "requestState": "s"}
out = {}
for model in waiting[3:] + [t.ListToolsRequest, t.InitializedNotification, t.ListTasksRequest]:
    out[model.__name__] = model.model_json_schema()
    try:
        out[model.__name__ + " valid"] = model.model_validate(asked).model_dump(mode="json")
    except Exception as exc:
        out[model.__name__ + " refused"] = [e["loc"] for e in exc.errors()]
print(json.dumps(out, sort_keys=True))
"""


def test_rebuilds_asked_at_import_wait_for_first_use_and_build_what_the_sdk_builds() -> None:
    """The rebuilds the SDK (four request-params models) and pydantic (a generic model's first
    parametrization) ask for during the lean import wait, and ``model_rebuild`` is pydantic's
    own again afterwards; those models then build on first use the validators and schemas the
    SDK imported whole builds at once (the same answers and refusals, forward references
    included)."""

    def probe(how: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", REBUILDS, how],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout.splitlines()

    lean, whole = probe("lean"), probe("whole")
    assert lean[:2] == ["[false, false, false, false, false, false, false]", "true"]
    assert whole[0] == "[true, true, true, true, true, true, true]"
    assert lean[2] == whole[2]
    assert '"CallToolRequestParams valid"' in lean[2] and "file:///r" in lean[2]
