"""The SDK's 2026 protocol era on first use (:mod:`noon.mcp.sdk_eras`): every per-version map of
``mcp_types.methods`` holds what the SDK imported whole holds, the version gate and a 2025 row
never load the era, and a 2026 message is validated by the era's own models."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.harness.mesh import ROOT, subprocess_env

MAPS = """
import json, sys
from types import MappingProxyType
if sys.argv[1] == "lean":
    import noon.mcp
from mcp_types import methods
ERA = "mcp_types._v2026_07_28"
out = {"era at start": ERA in sys.modules}
gate = ("tools/call", "2026-07-28") in methods.CLIENT_REQUESTS
keys = sorted(map(str, methods.SERVER_RESULTS))
row = methods.CLIENT_REQUESTS[("tools/call", "2025-11-25")].__module__
out["after the gate, the keys and a 2025 row"] = [gate, len(keys), row, ERA in sys.modules]
def name(v):
    return f"{v.__module__}.{v.__qualname__}" if isinstance(v, type) else repr(v)
maps = {k: v for k, v in vars(methods).items() if isinstance(v, MappingProxyType)}
out["maps"] = {k: sorted((str(key), name(v)) for key, v in m.items()) for k, m in maps.items()}
out["era"] = methods.v2026.__name__, methods.v2026.CallToolRequest.__module__
parsed = methods.parse_client_request(
    "tools/call", "2026-07-28", {"name": "read_graph", "arguments": {},
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {}}})
out["parsed"] = parsed.model_dump(mode="json")
try:
    methods.validate_client_request("tools/call", "2026-07-28", {"arguments": {}})
except Exception as exc:
    out["refused"] = sorted(str(e["loc"]) for e in exc.errors())
for m in (methods.parse_client_request, methods.validate_client_request):
    out[m.__name__] = str(m.__kwdefaults__["surface"] is methods.CLIENT_REQUESTS)
print(json.dumps(out, sort_keys=True))
"""

pytestmark = pytest.mark.integration


def _maps(how: str) -> dict[str, object]:
    out = subprocess.check_output(
        [sys.executable, "-c", MAPS, how], env=subprocess_env(), cwd=ROOT, text=True, timeout=60
    )
    result: dict[str, object] = json.loads(out)
    return result


def test_the_maps_hold_what_the_sdk_imported_whole_holds_and_load_the_era_on_a_2026_row() -> None:
    lean, whole = _maps("lean"), _maps("whole")
    assert (lean.pop("era at start"), whole.pop("era at start")) == (False, True)
    gate = "after the gate, the keys and a 2025 row"
    lean_gate, whole_gate = lean.pop(gate), whole.pop(gate)
    assert whole_gate == [True, 62, "mcp_types._v2025_11_25", True]
    assert lean_gate == [True, 62, "mcp_types._v2025_11_25", False]  # the era still not loaded
    assert lean == whole
    assert lean["era"] == ["mcp_types._v2026_07_28", "mcp_types._v2026_07_28"]
    assert "refused" in lean and lean["parse_client_request"] == "True"
