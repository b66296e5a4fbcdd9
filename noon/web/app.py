"""The page server: the aiohttp application (security checks, JSON errors, the API, the live
feed and the static page shipped in ``noon/web/static``)."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aiohttp import web

from noon.app.versions import VersionChanged
from noon.errors import Conflict, Invalid, Limit, NoonError, NotFound, Refused, Unavailable
from noon.web import routes, security
from noon.web.data import WebData
from noon.web.inputs import BODY_TIMEOUT, Body, SlowBody, json_body, query_params
from noon.web.listener import WebLimits
from noon.web.live import Live
from noon.web.routes import DATA, POOL

log = logging.getLogger("noon.web")

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY = 8 << 20
"""Largest request body (a memory text is at most 1 Mi characters)."""
WORKERS = 4
LIVE: web.AppKey[Live] = web.AppKey("live", Live)
GUARD: web.AppKey[security.Guard] = web.AppKey("guard", security.Guard)
LIVE_TASK: web.AppKey[asyncio.Task[None]] = web.AppKey("live_task", asyncio.Task)


def _error(status: int, message: str, **extra: object) -> web.Response:
    return web.json_response({"error": message, **extra}, status=status)


STATUS: tuple[tuple[type[Exception], int], ...] = (
    (NotFound, 404),
    (Conflict, 409),
    (Invalid, 400),
    (Refused, 400),
    (Limit, 400),
    (Unavailable, 503),
)
"""Each refusal kind of :mod:`noon.errors` as an HTTP status, the first that matches."""


def refusal(exc: NoonError) -> web.Response | None:
    """A refusal as the page reads it: ``{"error": message}`` with its status (a conflict also
    with ``current``), or None for an error that is no refusal."""
    status = next((code for kind, code in STATUS if isinstance(exc, kind)), None)
    if status is None:
        return None
    if isinstance(exc, VersionChanged):
        message = (
            f"This memory changed since the page loaded it (you saw version {exc.expected}, it "
            f"is now {exc.version}). Look at the new version and redo the edit."
        )
        return _error(status, message, current=exc.current)
    if isinstance(exc, Conflict):
        return _error(status, str(exc), current=exc.current)
    return _error(status, str(exc))


@web.middleware
async def errors(request: web.Request, handler: security.Handler) -> web.StreamResponse:
    """Every refusal as ``{"error": message}`` with its status (:func:`refusal`); a bug as a
    500 that says what broke (and is logged), never a stack trace page."""
    try:
        query_params(request)
        return await handler(request)
    except SlowBody as exc:
        slow = _error(408, str(exc))
        slow.force_close()
        return slow
    except NoonError as exc:
        refused = refusal(exc)
        if refused is not None:
            return refused
        log.exception("%s %s failed", request.method, request.path)
        return _error(500, "Internal error; the server's log says what broke.")
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(exc.status, exc.reason)
    except Exception:
        log.exception("%s %s failed", request.method, request.path)
        return _error(500, "Internal error; the server's log says what broke.")


async def index(request: web.Request) -> web.StreamResponse:
    """The page's shell: it holds no data. Its script reads the token from the address's
    fragment (``/#token=...``, which browsers never send to a server), trades it for the
    session at ``POST /api/login`` and drops it from the address bar."""
    response = web.FileResponse(STATIC / "index.html")
    response.headers["Cache-Control"] = "no-store"
    return response


async def login(request: web.Request) -> web.Response:
    """``{token}`` -> ``{session}``: the value the page sends as ``X-Noon-Session``."""
    guard = request.app[GUARD]
    body = Body(await json_body(request), {"token"})
    refused = guard.check_token(request, body.need("token", limit=4096))
    if refused is not None:
        return refused
    return web.json_response({"session": guard.session})


def create_app(
    data: WebData,
    guard: security.Guard,
    *,
    workers: int = WORKERS,
    body_timeout: float = WebLimits.body_timeout,
) -> web.Application:
    app = web.Application(
        client_max_size=MAX_BODY, middlewares=[errors, security.middleware(guard)]
    )
    pool = ThreadPoolExecutor(workers, thread_name_prefix="noon-web")
    live = Live(data, pool)
    app[DATA], app[POOL], app[LIVE], app[GUARD] = data, pool, live, guard
    app[BODY_TIMEOUT] = body_timeout
    app.router.add_get("/", index)
    app.router.add_post("/api/login", login)
    app.router.add_get("/api/events", live.handler)
    app.router.add_routes(routes.routes)
    app.router.add_static("/static/", STATIC, follow_symlinks=False)
    app.on_response_prepare.append(security.add_headers)

    async def start(app: web.Application) -> None:
        app[LIVE_TASK] = asyncio.create_task(live.run(), name="noon-web-live")

    async def stop(app: web.Application) -> None:
        live.closing.set()

    async def cleanup(app: web.Application) -> None:
        await app[LIVE_TASK]
        pool.shutdown(wait=True, cancel_futures=True)

    app.on_startup.append(start)
    app.on_shutdown.append(stop)
    app.on_cleanup.append(cleanup)
    return app
