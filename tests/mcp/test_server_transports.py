"""``noon serve`` as a real process: stdio with a real MCP client, and Streamable HTTP on
127.0.0.1 (namespaces per request header, bearer token)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.subscriptions import ResourceUpdated

from noon.cli import main
from tests.harness.mcp import Recorder, http_server
from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration

ALICE = {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}


def _serve_args(d: Path, *extra: str) -> list[str]:
    return ["--dir", str(d), "--node-id", "n1", *extra]


async def test_stdio_serves_a_real_client(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "noon", "serve", "--tools", "kg", *_serve_args(tmp_path)],
        env=subprocess_env(),
        cwd=str(ROOT),
    )
    async with Client(params, mode="legacy") as client:
        assert len((await client.list_tools()).tools) == 9
        r = await client.call_tool("create_entities", {"entities": [ALICE]})
        assert r.structured_content == {"entities": [ALICE]}
        r = await client.call_tool("read_graph", {})
        assert r.structured_content == {"entities": [ALICE], "relations": []}
    assert (tmp_path / "n1.jsonl").exists()


async def test_stdio_speaks_the_2026_era_too(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "noon", "serve", "--tools", "kg", *_serve_args(tmp_path)],
        env=subprocess_env(),
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        assert client.protocol_version == "2026-07-28"
        r = await client.call_tool("search_nodes", {"query": ""})
        assert r.structured_content == {"entities": [], "relations": []}


def _client(url: str, **headers: str) -> Client:
    http = create_mcp_http_client(headers=headers or None)
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


async def test_http_namespaces_come_from_the_request_header(tmp_path: Path) -> None:
    with http_server(_serve_args(tmp_path, "--tools", "kg")) as url:
        async with _client(url, **{"X-Noon-Namespace": "work"}) as work:
            await work.call_tool("create_entities", {"entities": [ALICE]})
        async with _client(url) as default:
            r = await default.call_tool("read_graph", {})
            assert r.structured_content == {"entities": [], "relations": []}
        async with _client(url, **{"X-Noon-Namespace": "work"}) as work:
            r = await work.call_tool("open_nodes", {"names": ["Alice"]})
            assert r.structured_content == {"entities": [ALICE], "relations": []}


async def test_http_token_is_enforced(tmp_path: Path) -> None:
    with http_server(_serve_args(tmp_path, "--token", "s3cret")) as url:
        async with httpx2.AsyncClient() as raw:
            resp = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert resp.status_code == 401
        async with _client(url, Authorization="Bearer s3cret") as client:
            assert len((await client.list_tools()).tools) >= 9


def test_http_off_loopback_without_token_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOON_TOKEN", raising=False)
    assert main(["serve", "--http", "0.0.0.0:0", *_serve_args(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "needs a bearer token" in out.err and out.out == ""


@pytest.mark.parametrize("bad", ["8080", "host:port", ":80", "[::1]:99999"])
def test_http_address_must_be_host_and_port(
    tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--http", bad, *_serve_args(tmp_path)]) == 1
    assert "HOST:PORT" in capsys.readouterr().err


async def test_http_subscribers_hear_writes_of_other_clients(tmp_path: Path) -> None:
    rec = Recorder()
    with http_server(_serve_args(tmp_path, "--tools", "kg")) as url:
        http = create_mcp_http_client()
        listener = Client(
            streamable_http_client(url, http_client=http), mode="legacy", message_handler=rec
        )
        async with listener:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await listener.subscribe_resource("memory://knowledge-graph")
            async with _client(url) as writer:
                await writer.call_tool("create_entities", {"entities": [ALICE]})
            await rec.wait(lambda: rec.updated() == ["memory://knowledge-graph"])


async def test_http_2026_listen_streams_hear_writes(tmp_path: Path) -> None:
    with http_server(_serve_args(tmp_path, "--tools", "kg")) as url:
        async with Client(url) as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(resource_subscriptions=["memory://knowledge-graph"]) as sub:
                async with _client(url) as writer:
                    await writer.call_tool("create_entities", {"entities": [ALICE]})
                with anyio.fail_after(10):
                    event = await anext(aiter(sub))
                assert isinstance(event, ResourceUpdated)
                assert str(event.uri) == "memory://knowledge-graph"
