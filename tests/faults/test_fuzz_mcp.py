"""Hostile MCP tool arguments through a real in-memory MCP client, for every tool of both
families: random JSON, wrong types, missing and extra fields, deep nesting, huge strings.
Every call answers (no crash, no internal error); a refused call is a clear ``isError`` result
and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from noon.mcp.server import create_server
from noon.store.store import Store
from tests.harness.mcp import make_settings, make_store

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(["", "core://", "system://boot", "../../etc", "a" * 5000, "\x00"])
)
json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=15,
)


class Target:
    """One store and server shared by every example; a fresh client per call."""

    def __init__(self, root: Path) -> None:
        self.dir = root
        self.store: Store = make_store(root)
        self.server = create_server(self.store, make_settings(root), {"uri", "kg"})
        self.tools: dict[str, dict[str, Any]] = anyio.run(self._tools)

    async def _tools(self) -> dict[str, dict[str, Any]]:
        async with Client(self.server, mode="legacy") as c:
            listed = await c.list_tools()
        return {t.name: t.input_schema for t in listed.tools}

    def shard_bytes(self) -> int:
        own = self.dir / "n1.jsonl"
        return own.stat().st_size if own.exists() else 0

    def call(self, name: str, args: Any) -> Any:
        async def go() -> Any:
            async with Client(self.server, mode="legacy") as c:
                return await c.call_tool(name, args)

        return anyio.run(go)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Target:
    return Target(tmp_path_factory.mktemp("mcp-fuzz"))


def test_both_families_are_under_test(target: Target) -> None:
    assert {"create_entities", "read_graph", "search_nodes", "open_nodes"} <= set(target.tools)
    assert len(target.tools) >= 15, sorted(target.tools)


@st.composite
def hostile_args(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """Arguments shaped after the schema but with wrong types, missing or extra fields."""
    props: dict[str, Any] = schema.get("properties", {})
    args: dict[str, Any] = {}
    for name in props:
        if draw(st.integers(0, 3)):
            args[name] = draw(json_values)
    if draw(st.booleans()):
        args[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
    if draw(st.integers(0, 9)) == 0:
        depth = draw(st.integers(20, 120))  # pydantic refuses to serialise deeper
        nested: Any = "deep"
        for _ in range(depth):
            nested = [nested]
        args[draw(st.sampled_from([*props, "x"]))] = nested
    return args


def is_clear_error(result: Any) -> str:
    assert result.is_error
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert text.strip(), "an error result must say what is wrong"
    assert "Internal error" not in text, text
    return text


@settings(
    max_examples=150,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_arguments_never_crash_and_refusals_write_nothing(target: Target, data) -> None:
    name = data.draw(st.sampled_from(sorted(target.tools)))
    args = data.draw(hostile_args(target.tools[name]))
    before = target.shard_bytes()
    result = target.call(name, args)
    if result.is_error:
        is_clear_error(result)
        assert target.shard_bytes() == before, f"{name} refused {args!r:.200} but wrote"
    else:  # the arguments happened to be valid: the answer must be well-formed
        assert result.content or result.structured_content is not None


@pytest.mark.parametrize("args", [None, [], "text", 5, {"": None}])
def test_non_object_arguments_are_refused_for_every_tool(target: Target, args: Any) -> None:
    for name, schema in sorted(target.tools.items()):
        if not schema.get("required") and args in (None, {"": None}):
            continue  # no required field: empty arguments are valid
        before = target.shard_bytes()
        try:
            result = target.call(name, args)
        except Exception as exc:  # the client itself may refuse to send a non-object
            assert not isinstance(args, dict | type(None)), (name, exc)
            continue
        is_clear_error(result)
        assert target.shard_bytes() == before, name


def test_unknown_tools_are_clear_errors(target: Target) -> None:
    text = is_clear_error(target.call("drop_database", {"really": True}))
    assert "not found" in text
    assert json.dumps(text)
