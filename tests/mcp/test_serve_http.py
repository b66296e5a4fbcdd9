"""``noon serve --http`` as a real process, for clients that are not the ones it expects: web
pages (DNS rebinding, foreign origins), clients without the token (OAuth-capable ones), and
clients configured for Nocturne Memory (its namespace header, query and variable, and its legacy
SSE endpoint)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from noon.cli import main
from tests.harness.mcp import INITIALIZE, POST_HEADERS, serve_env, serve_process, tool_text
from tests.harness.mesh import ROOT
from tests.harness.uri import Session

pytestmark = pytest.mark.integration


def _args(d: Path, *extra: str) -> list[str]:
    return ["--dir", str(d), "--node-id", "n1", "--tools", "uri", *extra]


def _client(url: str, **headers: str) -> Client:
    http = create_mcp_http_client(headers=headers or None)
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


@pytest.mark.parametrize("host", ["127.0.0.2", "0:0:0:0:0:0:0:1"])
async def test_loopback_binds_refuse_rebound_hosts_and_foreign_origins(
    tmp_path: Path, host: str
) -> None:
    """Issue 13 item 8: on a loopback bind other than the literal 127.0.0.1/::1 no Host or
    Origin was checked, so a web page whose name rebinds to 127.0.0.2 could call every tool."""
    with serve_process(_args(tmp_path), serve_env(), host=host) as served:
        url, port = served.url, served.url.rsplit(":", 1)[1].split("/")[0]
        async with httpx2.AsyncClient(timeout=10) as http:
            rebound = await http.post(
                url, json=INITIALIZE, headers={**POST_HEADERS, "host": f"evil.test:{port}"}
            )
            assert rebound.status_code == 421 and "DNS rebinding" in rebound.json()["error"]
            foreign = await http.post(
                url, json=INITIALIZE, headers={**POST_HEADERS, "origin": "http://evil.test"}
            )
            assert foreign.status_code == 403
            sse = await http.get(url.replace("/mcp", "/sse"), headers={"host": "evil.test"})
            assert sse.status_code == 421
            local = await http.post(
                url, json=INITIALIZE, headers={**POST_HEADERS, "origin": f"http://localhost:{port}"}
            )
            assert local.status_code == 200
        async with _client(url) as client:  # an honest client on the bound address is served
            s = Session(client)
            await s.create("core://", "a", "reachable")
            assert "reachable" in await s.read("core://a")
    assert "refused a request" in served.stderr()


async def test_a_missing_token_names_noon_token_and_starts_no_oauth(tmp_path: Path) -> None:
    """Issue 15: a bare 401 with a Bearer challenge made OAuth-capable clients report an OAuth
    problem. The 401 now says what to send and carries no challenge that starts discovery."""
    with serve_process(_args(tmp_path, "--token", "s3cret"), serve_env()) as served:
        base = served.url.removesuffix("/mcp")
        async with httpx2.AsyncClient(timeout=10) as http:
            missing = await http.post(served.url, json=INITIALIZE, headers=POST_HEADERS)
            assert missing.status_code == 401
            assert "www-authenticate" not in missing.headers
            assert missing.headers["content-type"] == "application/json"
            assert "NOON_TOKEN" in missing.json()["hint"] and "not OAuth" in missing.json()["hint"]
            for probe in ("/.well-known/oauth-protected-resource/mcp", "/register"):
                got = await http.get(base + probe)
                assert got.status_code == 404 and "NOON_TOKEN" in got.json()["hint"]
            wrong = await http.post(
                served.url,
                json=INITIALIZE,
                headers={**POST_HEADERS, "authorization": "Bearer nope"},
            )
            assert wrong.status_code == 401
        async with _client(served.url, Authorization="Bearer s3cret") as client:
            assert (await client.list_tools()).tools


async def _read_default_and(url: str, namespace: str, uri: str) -> tuple[str, str]:
    async with _client(url) as client:
        r = await client.call_tool("read_memory", {"uri": uri})
        default = tool_text(r)
    async with _client(url, **{"X-Noon-Namespace": namespace}) as client:
        r = await client.call_tool("read_memory", {"uri": uri})
        chosen = tool_text(r)
    return default, chosen


async def test_nocturne_clients_land_in_the_namespace_they_ask_for(tmp_path: Path) -> None:
    """Issue 15: X-Namespace and ?namespace= (Nocturne's) were ignored: everything landed in
    'default'."""
    with serve_process(_args(tmp_path), serve_env()) as served:
        async with _client(served.url, **{"X-Namespace": "work"}) as client:
            await Session(client).create("core://", "a", "a work memory")
        async with Client(streamable_http_client(served.url + "?namespace=home")) as client:
            await Session(client).create("core://", "a", "a home memory")
        default, work = await _read_default_and(served.url, "work", "core://a")
        assert "not found" in default and "a work memory" in work
        _, home = await _read_default_and(served.url, "home", "core://a")
        assert "a home memory" in home
        async with _client(served.url, **{"X-Namespace": "not valid!"}) as client:
            with pytest.raises(Exception, match="invalid namespace 'not valid!'"):
                await client.call_tool("read_memory", {"uri": "core://a"})


async def test_the_nocturne_namespace_variable_is_honoured_on_stdio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def stdio(**env: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "noon", "serve", *_args(tmp_path)],
            env=serve_env(**env),
            cwd=str(ROOT),
        )

    async with Client(stdio(NAMESPACE="work"), mode="legacy") as client:
        await Session(client).create("core://", "a", "from a Nocturne config")
    async with Client(stdio(NOON_NAMESPACE="work", NAMESPACE="ignored"), mode="legacy") as client:
        assert "from a Nocturne config" in await Session(client).read("core://a")
    monkeypatch.delenv("NOON_NAMESPACE", raising=False)
    monkeypatch.setenv("NAMESPACE", "no spaces allowed")
    assert main(["serve", *_args(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "NAMESPACE='no spaces allowed' (Nocturne's setting)" in err and "NOON_NAMESPACE" in err


async def test_the_legacy_sse_endpoint_serves_a_real_sse_client(tmp_path: Path) -> None:
    """Issue 15: clients configured for Nocturne's SSE endpoint could not connect. The SSE
    session keeps the namespace its stream asked for (its posts carry only a session id)."""
    with serve_process(_args(tmp_path), serve_env()) as served:
        sse_url = served.url.removesuffix("/mcp") + "/sse?namespace=work"
        transport: Any = sse_client(sse_url)
        async with Client(transport, mode="legacy") as client:
            s = Session(client)
            assert "system://boot" in (client.instructions or "")
            await s.create("core://", "sse", "written over SSE")
            assert "written over SSE" in await s.read("core://sse")
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "update_memory" in tools
        default, work = await _read_default_and(served.url, "work", "core://sse")
        assert "not found" in default and "written over SSE" in work
