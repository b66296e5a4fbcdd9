"""Who may talk to the page server, and how (see docs/web.md, "Security").

Every request:
- names an allowed ``Host`` (the listening address, loopback names, this machine's names, and
  ``--allow-host`` ones): a page served under another name is refused, which defeats DNS
  rebinding (an attacker's name resolving to this machine);
- if it carries ``Origin``, that is one of those hosts; API requests marked ``Sec-Fetch-Site:
  cross-site`` or ``same-site`` are refused;
- is authenticated, on every bind (loopback too: another account on the machine reaches
  loopback as well as the person does), except the page shell, its static assets and
  ``POST /api/login``: by the ``X-Noon-Session`` header the page's script sends (the session
  it got from the login, kept in the origin's storage), or by ``Authorization: Bearer <token>``
  for programs.

No credential is a cookie. A browser scopes cookies by host, not port, so a cookie would reach
every other server on 127.0.0.1; a header is sent only by a script that holds the session, and
a script reads only its own origin's storage (scheme, host and port). The same header is the
CSRF defence: a cross-origin page can neither read the session nor send the header without a
preflight this server never grants. Guessing the token is bounded by :mod:`noon.web.guesses`.
"""

from __future__ import annotations

import hmac
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.typedefs import Middleware

from noon.web.guesses import Guesses

SESSION_HEADER = "X-Noon-Session"
PUBLIC = ("/static/", "/favicon.ico")
"""Paths served without authentication: the assets hold no data."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(listen_host: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """``host:port`` values a request's ``Host`` may have. A wildcard address adds this
    machine's names and addresses; loopback names are always there."""
    names = {"localhost", "127.0.0.1", "::1", *extra}
    if listen_host not in ("0.0.0.0", "::", ""):
        names.add(listen_host)
    else:
        names |= {socket.gethostname(), socket.getfqdn()}
        try:
            infos = socket.getaddrinfo(socket.gethostname(), None)
        except OSError:
            infos = []
        names |= {str(info[4][0]) for info in infos}
    return frozenset(f"{_bracket(n).lower()}:{port}" for n in names if n)


@dataclass
class Guard:
    hosts: frozenset[str]
    token: str
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """What ``POST /api/login`` trades the token for (random per server start: restarting
    logs every page out)."""
    guesses: Guesses = field(default_factory=Guesses)

    def origin_ok(self, origin: str) -> bool:
        scheme, sep, rest = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and rest.lower() in self.hosts

    def check_token(self, request: web.Request, offered: str) -> web.Response | None:
        """None if ``offered`` is the token; else the refusal: 401, or 429 when this address
        (or every address together) offered too many wrong tokens lately, then unchecked."""
        source = request.remote or "unknown"
        limited = self.guesses.refusal(source)
        if limited is not None:
            message, wait = limited
            answer = refuse(429, message)
            answer.headers["Retry-After"] = str(wait)
            return answer
        if hmac.compare_digest(offered.encode(), self.token.encode()):
            return None
        self.guesses.failed(source)
        return refuse(401, "Wrong token.")

    def session_ok(self, request: web.Request) -> bool:
        got = request.headers.get(SESSION_HEADER, "")
        return hmac.compare_digest(got.encode(), self.session.encode())


def refuse(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


NEEDS_LOGIN = (
    "Log in first: open the address noon web printed (it carries the token once), or give "
    "the token (NOON_TOKEN) to the page."
)


def middleware(guard: Guard) -> Middleware:
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = (request.headers.get("Host") or "").lower()
        if host not in guard.hosts:
            return refuse(
                421,
                f"Host {host[:100]!r} is not one this server answers to (a protection against "
                "DNS rebinding). Use the address noon web printed, or start it with "
                "--allow-host NAME.",
            )
        origin = request.headers.get("Origin")
        if origin is not None and not guard.origin_ok(origin):
            return refuse(403, f"Cross-origin request from {origin[:100]!r} refused.")
        path = request.path
        if path.startswith("/api/") and request.headers.get("Sec-Fetch-Site") in (
            "cross-site",
            "same-site",
        ):
            return refuse(403, "Cross-site request refused.")
        public = path.startswith(PUBLIC) or path == "/" or path == "/api/login"
        if public or guard.session_ok(request):
            return await handler(request)
        bearer = request.headers.get("Authorization", "")
        if not bearer.startswith("Bearer "):
            return refuse(401, NEEDS_LOGIN)
        refused = guard.check_token(request, bearer[len("Bearer ") :])
        return refused if refused is not None else await handler(request)

    return check


SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


async def add_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.path.startswith("/api/"):
        response.headers.setdefault("Cache-Control", "no-store")
