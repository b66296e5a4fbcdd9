"""The SDK imported the lean way (noon.mcp.sdk_import) is still the whole SDK: a name only a
package ``__init__`` defines loads it in place, and a model or type adapter defined with its
validator deferred validates and refuses as the SDK's own does."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
