"""The checks every HTTP request to ``noon serve --http`` passes before it reaches MCP.

- Host and Origin (DNS rebinding). Bound to a loopback address, the server answers only requests
  whose ``Host`` names a loopback address or ``localhost`` (a page on ``evil.example`` that
  rebinds its name to 127.0.0.2 still sends ``Host: evil.example``), and whose ``Origin``, when
  a browser sends one, is a loopback origin too. Beyond loopback a bearer token is required and
  an ``Origin`` must be the server's own (the ``Host`` the request came to).
- The bearer token, when one is set. A missing or wrong token gets a 401 with a JSON body that
  names ``NOON_TOKEN``, and no ``WWW-Authenticate: Bearer`` challenge: the token is a shared
  secret, not OAuth, and a Bearer challenge makes OAuth-capable MCP clients start an OAuth
  discovery that can only fail (and then report an OAuth problem instead of the missing token).
  The OAuth discovery paths answer 404 with the same explanation, for clients that probe anyway.
- The namespace. Nocturne clients send ``X-Namespace`` or ``?namespace=``; both are honoured as
  ``X-Noon-Namespace`` (which wins when several are sent). The server validates the value.

Refusals are logged through :func:`noon.mcp.http_limits.refused` (rate-limited).
"""

from __future__ import annotations

import hmac
import json
from urllib.parse import parse_qs, urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from noon.mcp.http_limits import refused
from noon.mcp.server import NAMESPACE_HEADER
from noon.net import is_loopback

NOCTURNE_NAMESPACE_HEADER = b"x-namespace"
OAUTH_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
)
TOKEN_HINT = (
    "noon serve takes a static bearer token, not OAuth: send the header "
    "'Authorization: Bearer <token>', where <token> is the value of NOON_TOKEN (or --token) "
    "the server was started with."
)


def host_of(authority: str) -> str:
    """The host part of ``host[:port]`` (IPv6 in brackets)."""
    authority = authority.strip()
    if authority.startswith("["):
        return authority[1 : authority.find("]")] if "]" in authority else authority
    return authority.rpartition(":")[0] if authority.count(":") == 1 else authority


async def _answer(send: Send, status: int, body: dict[str, str]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


class Guard:
    """ASGI middleware applying the checks above to every HTTP request."""

    def __init__(self, app: ASGIApp, *, loopback: bool, token: str | None) -> None:
        self.app = app
        self.loopback = loopback
        self.expected = f"Bearer {token}".encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        client = scope.get("client")
        source = str(client[0]) if client else "unknown"
        problem = self._origin_problem(headers)
        if problem is not None:
            status, reason, value = problem
            refused("a request", source, reason, value)
            await _answer(send, status, {"error": reason % (value,)})
            return
        if scope["path"].startswith(OAUTH_PATHS):
            await _answer(send, 404, {"error": "no OAuth here", "hint": TOKEN_HINT})
            return
        if self.expected is not None and not hmac.compare_digest(
            headers.get(b"authorization", b""), self.expected
        ):
            refused("a request", source, "missing or wrong bearer token")
            await _answer(send, 401, {"error": "missing or wrong bearer token", "hint": TOKEN_HINT})
            return
        await self.app(_with_namespace(scope, headers), receive, send)

    def _origin_problem(self, headers: dict[bytes, bytes]) -> tuple[int, str, str] | None:
        """(status, reason with a %r for the value, the value) of a Host or Origin refused."""
        host = headers.get(b"host", b"").decode("latin-1")
        if self.loopback and not is_loopback(host_of(host)):
            return 421, "Host %r is not this loopback server's (DNS rebinding?)", host[:100]
        raw_origin = headers.get(b"origin")
        if raw_origin is None:
            return None
        origin = raw_origin.decode("latin-1")
        parts = urlsplit(origin)
        if self.loopback:
            allowed = parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")
        else:
            allowed = parts.netloc.lower() == host.lower()
        if not allowed:
            return 403, "Origin %r may not call this server", origin[:100]
        return None


def _with_namespace(scope: Scope, headers: dict[bytes, bytes]) -> Scope:
    """``scope`` with Nocturne's namespace (header or query) as ``X-Noon-Namespace``."""
    canonical = NAMESPACE_HEADER.encode()
    if canonical in headers:
        return scope
    value = headers.get(NOCTURNE_NAMESPACE_HEADER)
    if value is None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if "namespace" not in query:
            return scope
        value = query["namespace"][0].encode("latin-1")
    return {**scope, "headers": [*scope["headers"], (canonical, value)]}
