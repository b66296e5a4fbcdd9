"""Who may talk to the page server, and how (see docs/web.md, "Security").

Every request:
- names an allowed ``Host`` (the listening address, loopback names, this machine's names, and
  ``--allow-host`` ones): a page served under another name is refused, which defeats DNS
  rebinding (an attacker's name resolving to this machine);
- if it carries ``Origin``, that is one of those hosts; API requests marked ``Sec-Fetch-Site:
  cross-site`` or ``same-site`` are refused;
- when a token is set (always, off loopback), is authenticated: by the session cookie the
  login sets (``POST /api/login`` or a first visit to ``/?token=...``), or by ``Authorization:
  Bearer <token>`` for programs.

State-changing requests (anything but GET/HEAD) also carry the per-server CSRF token twice: in
the ``SameSite=Strict`` cookie set with the page and in the ``X-Noon-CSRF`` header the page's
script sends (a custom header no cross-origin page can add without a preflight this server
never grants). A program authenticated by its bearer token needs neither.
"""

from __future__ import annotations

import hmac
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.typedefs import Middleware

CSRF_HEADER = "X-Noon-CSRF"
SAFE_METHODS = frozenset(("GET", "HEAD"))
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
    token: str | None
    port: int
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """The value of the login cookie (random per server start: restarting logs everyone out)."""

    @property
    def csrf_cookie(self) -> str:
        return f"noon_csrf_{self.port}"

    @property
    def auth_cookie(self) -> str:
        return f"noon_auth_{self.port}"

    def origin_ok(self, origin: str) -> bool:
        scheme, sep, rest = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and rest.lower() in self.hosts

    def token_ok(self, offered: str) -> bool:
        return self.token is not None and hmac.compare_digest(offered.encode(), self.token.encode())

    def bearer(self, request: web.Request) -> bool:
        got = request.headers.get("Authorization", "")
        return got.startswith("Bearer ") and self.token_ok(got[len("Bearer ") :])

    def authenticated(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        cookie = request.cookies.get(self.auth_cookie, "")
        return hmac.compare_digest(cookie.encode(), self.session.encode()) or self.bearer(request)

    def csrf_ok(self, request: web.Request) -> bool:
        header = request.headers.get(CSRF_HEADER, "")
        cookie = request.cookies.get(self.csrf_cookie, "")
        return hmac.compare_digest(header.encode(), self.csrf.encode()) and hmac.compare_digest(
            cookie.encode(), self.csrf.encode()
        )

    def set_cookies(self, response: web.StreamResponse, *, login: bool = False) -> None:
        response.set_cookie(self.csrf_cookie, self.csrf, httponly=True, samesite="Strict", path="/")
        if login:
            response.set_cookie(
                self.auth_cookie, self.session, httponly=True, samesite="Strict", path="/"
            )


def refuse(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


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
        api = path.startswith("/api/")
        if api and request.headers.get("Sec-Fetch-Site") in ("cross-site", "same-site"):
            return refuse(403, "Cross-site request refused.")
        public = path.startswith(PUBLIC) or path == "/" or path == "/api/login"
        if not public and not guard.authenticated(request):
            return refuse(401, "Log in first: this server needs its token (NOON_TOKEN).")
        if request.method not in SAFE_METHODS and not (
            guard.bearer(request) or guard.csrf_ok(request)
        ):
            return refuse(
                403,
                f"Missing or wrong CSRF token: state-changing requests need the {CSRF_HEADER} "
                "header and cookie the page sets (reload the page).",
            )
        return await handler(request)

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
