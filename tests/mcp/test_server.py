"""The MCP server infrastructure: tool tables on the low-level SDK server, argument checks,
provenance, and resource notifications of both protocol eras, for writes through the server and
writes from anywhere else (another process, a replica shard)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated

from noon.core.ops import Draft
from noon.mcp.families import uri_family
from noon.mcp.kg_tools import FAMILY as KG
from noon.mcp.server import create_server
from noon.mcp.validation import ArgumentValidator
from tests.harness.mcp import Recorder, make_settings, make_store

GRAPH = "memory://knowledge-graph"
ALICE = {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _server(d: Path, families: set[str] | None = None, node: str = "n1"):
    settings = make_settings(d, node)
    store = make_store(d, node)
    return create_server(store, settings, families or {"kg"}), store


def _text(r: types.CallToolResult) -> str:
    first = r.content[0]
    assert isinstance(first, types.TextContent), first
    return first.text


async def test_kg_family_lists_exactly_the_nine_official_tools(tmp_path: Path) -> None:
    server, _ = _server(tmp_path)
    async with Client(server, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == [
            "create_entities",
            "create_relations",
            "add_observations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "read_graph",
            "search_nodes",
            "open_nodes",
        ]
        assert all(t.execution and t.execution.task_support == "forbidden" for t in tools)
        caps = client.server_capabilities
        assert caps.tools and caps.tools.list_changed is True
        assert caps.resources and caps.resources.subscribe is True
        assert caps.resources.list_changed is True
        assert caps.prompts is None
        assert client.server_info is not None and client.server_info.name == "noon"


async def test_unknown_tool_and_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    server, store = _server(tmp_path)
    async with Client(server, mode="legacy") as client:
        r = await client.call_tool("create_entity", {"entities": []})
        assert r.is_error and _text(r) == "MCP error -32602: Tool create_entity not found"
        r = await client.call_tool("create_entities", {"entitys": [ALICE]})
        assert r.is_error
        assert _text(r) == (
            "MCP error -32602: Input validation error: Invalid arguments for tool "
            "create_entities: Invalid input: expected array, received undefined at entities"
        )
        r = await client.call_tool(
            "create_entities", {"entities": [{"name": "A", "observations": [1]}]}
        )
        assert _text(r).endswith(
            "Invalid input: expected string, received undefined at entities[0].entityType\n"
            "Invalid input: expected string, received number at entities[0].observations[0]"
        )
    assert store.fold.applied == 0  # nothing was written by refused calls


def test_validator_reports_extra_arguments_by_name() -> None:
    schema = {
        "type": "object",
        "properties": {"uri": {"type": "string"}},
        "required": ["uri"],
        "additionalProperties": False,
    }
    v = ArgumentValidator(schema)
    assert v.problems({"uri": "core://a"}) == []
    assert v.problems({"url": "core://a"}) == [
        "Invalid input: expected string, received undefined at uri",
        'Unrecognized key: "url"',
    ]


async def test_writes_record_the_client_name_as_provenance(tmp_path: Path) -> None:
    server, store = _server(tmp_path)
    info = types.Implementation(name="claude-code", version="1.0")
    async with Client(server, mode="legacy", client_info=info) as client:
        r = await client.call_tool("create_entities", {"entities": [ALICE]})
        assert not r.is_error
    store.refresh()
    assert {el.winner.by for el in store.fold.elements.values()} == {"claude-code"}


async def test_unknown_resource_is_a_jsonrpc_error(tmp_path: Path) -> None:
    server, _ = _server(tmp_path)
    async with Client(server, mode="legacy") as client:
        with pytest.raises(Exception, match="Resource memory://other not found"):
            await client.read_resource("memory://other")


def _external_write(d: Path, node: str = "replica") -> None:
    """A write that does not go through the server: another node's shard growing."""
    other = make_store(d, node)
    other.write(lambda fold: [Draft(("entity", "default", "Bob"), {"type": "person"})])


async def test_legacy_subscription_notifies_tool_writes_and_external_writes(
    tmp_path: Path,
) -> None:
    server, _ = _server(tmp_path)
    rec = Recorder()
    async with Client(server, mode="legacy", message_handler=rec) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(GRAPH)
        await client.call_tool("create_entities", {"entities": [ALICE]})
        # sent before the response, like the official server
        assert rec.updated() == [GRAPH]
        # failed calls do not notify
        await client.call_tool(
            "add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}
        )
        assert rec.updated() == [GRAPH]
        # reads do not notify
        await client.call_tool("read_graph", {})
        assert rec.updated() == [GRAPH]
        _external_write(tmp_path)
        await rec.wait(lambda: len(rec.updated()) == 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.unsubscribe_resource(GRAPH)
        await client.call_tool("create_entities", {"entities": [{**ALICE, "name": "Carol"}]})
    assert rec.updated() == [GRAPH, GRAPH]


async def test_modern_listen_notifies_tool_writes_and_external_writes(tmp_path: Path) -> None:
    server, _ = _server(tmp_path)
    async with Client(server) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=[GRAPH]) as stream:
            await client.call_tool("create_entities", {"entities": [ALICE]})
            events = aiter(stream)
            first = await anext(events)
            assert isinstance(first, ResourceUpdated) and str(first.uri) == GRAPH
            _external_write(tmp_path)
            second = await anext(events)
            assert isinstance(second, ResourceUpdated) and str(second.uri) == GRAPH


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "entities",
                    "name",
                    "entityType",
                    "observations",
                    "names",
                    "query",
                    "relations",
                    "from",
                    "to",
                    "relationType",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(tool=st.sampled_from(KG.tools), value=_JSON)
def test_fast_validation_agrees_with_jsonschema(tool: Any, value: Any) -> None:
    validator = ArgumentValidator(tool.input_schema)
    assert validator.simple
    args = value if isinstance(value, dict) else {"entities": value, "names": value}
    expected = Draft7Validator(tool.input_schema).is_valid(args)
    assert (validator.problems(args) == []) == expected


_URI_TOOLS = uri_family().tools
_URI_VALUE = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=1003)
    | st.sampled_from([-(10**400), 10**400, 0.5, 1.0, -0.0, 1e308])
    | st.text(max_size=3)
    | st.text(min_size=126, max_size=130)
    | st.builds(lambda n: "x" * n, st.sampled_from([4095, 4096, 4097]))
    | st.lists(st.text(max_size=2), max_size=3)
)


def _edges(schema: dict[str, Any], low: str, high: str) -> list[int]:
    """The sizes on either side of each bound ``schema`` sets."""
    bounds = [schema[k] for k in (low, high) if k in schema]
    return [n for b in bounds for n in (b - 1, b, b + 1) if n >= 0] or [0, 1]


def _fitting(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the type a property declares, many at the edges of its bounds."""
    kind = schema.get("type")
    if kind == "integer":
        edges = _edges(schema, "minimum", "maximum")
        return st.sampled_from([*edges, -1]) | st.integers(min_value=-1, max_value=1001)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        size = st.sampled_from(_edges(schema, "minItems", "maxItems"))
        return size.map(lambda n: ["a"] * n) | st.lists(st.text(max_size=3), max_size=3)
    size = st.sampled_from(_edges(schema, "minLength", "maxLength"))
    return size.map(lambda n: "é" * n) | st.text(max_size=5)


@settings(max_examples=400, deadline=None)
@given(tool=st.sampled_from(_URI_TOOLS), data=st.data())
def test_fast_validation_of_bounds_agrees_with_jsonschema(tool: Any, data: Any) -> None:
    """The URI tools' schemas bound lengths and ranges: the compiled check accepts exactly what
    jsonschema accepts (a value it refuses goes to jsonschema for its problems)."""
    schema = tool.input_schema
    keys = data.draw(st.sets(st.sampled_from([*schema["properties"], "x"]), max_size=4))
    if data.draw(st.booleans()):
        keys |= set(schema.get("required", ()))
    props, fit = schema["properties"], data.draw(st.booleans())
    value = {
        key: data.draw(_fitting(props[key]) if fit and key in props else _URI_VALUE)
        for key in sorted(keys)
    }
    validator = ArgumentValidator(schema)
    assert validator.simple and validator._fast_check is not None
    expected = Draft7Validator(schema).is_valid(value)
    event("valid" if expected else "refused")
    if not any(isinstance(v, float) and v.is_integer() for v in value.values()):
        assert validator._fast_check(value) == expected  # 1.0 is an integer to jsonschema
    assert (validator.problems(value) == []) == expected
