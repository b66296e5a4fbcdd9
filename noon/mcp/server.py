"""The MCP server: the tool families' tools and resources turned into the SDK's low-level
``Server``.

The low-level server is used (not ``MCPServer``) so the families' schemas go on the wire verbatim
and errors read exactly as the official memory server's. Arguments are validated here, once,
against the schema ``tools/list`` shows; a family's refusals become error results here too. One
``Server`` serves one store; the namespace is the settings' one, or per HTTP request the
``X-Noon-Namespace`` header.

Resource notifications reach subscribers of both protocol eras: legacy ``resources/subscribe``
(kept per session) and 2026-07-28 ``subscriptions/listen`` (through the SDK's listen handler and
bus). They fire after every write of a tool (the official server notifies even when a call
changed nothing), and for changes from anywhere else - another process on this machine, or a
replica shard that ``noond`` extended - which a background task picks up by polling
``store.refresh()`` every :data:`POLL_SECONDS` while anyone is subscribed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from noon.app.actor import NAMESPACE
from noon.config import Settings
from noon.core.elements import KG_KINDS
from noon.core.ops import Key
from noon.errors import Unavailable
from noon.mcp import retried
from noon.mcp.families import FAMILIES
from noon.mcp.spec import Family, ResourceSpec, ToolContext, ToolResult, ToolSpec, tool_error
from noon.mcp.validation import ArgumentValidator
from noon.package import installed_version
from noon.store import retries
from noon.store.access import service
from noon.store.store import AlreadyWritten, Store, StoreError, Touched

log = logging.getLogger("noon.mcp")

POLL_SECONDS = 0.2
"""How often changes from other writers are looked for while someone is subscribed."""
NAMESPACE_HEADER = "x-noon-namespace"
KG_SCHEME = "memory://"


def with_notice(result: ToolResult, store: Store) -> ToolResult:
    """A tool's result, with a last text block saying so while the memory shown is not current
    (the read model is behind its shards: a full disk)."""
    behind = store.behind
    if behind is None:
        return result
    if isinstance(result, dict):
        result.setdefault("content", []).append({"type": "text", "text": behind.notice()})
    else:
        result.content.append(types.TextContent(type="text", text=behind.notice()))
    return result


def package_version() -> str:
    return installed_version() or "0.0.0"


def _affects(uri: str, namespace: str, keys: set[Key]) -> bool:
    """Whether changed element keys can change what ``uri`` shows in ``namespace``: the
    knowledge-graph resource follows the knowledge-graph kinds, every other resource (URI-graph
    nodes and views) the other kinds."""
    kg = uri.startswith(KG_SCHEME)
    return any(k[1] == namespace and (k[0] in KG_KINDS) == kg for k in keys)


def _connection(session: Any) -> Any:
    """The connection behind a per-request ``ServerSession`` (the SDK builds one session object
    per request; subscriptions belong to the connection)."""
    return getattr(session, "_connection", session)


@dataclass
class _Subscriber:
    """One legacy session's subscriptions (``resources/subscribe``)."""

    session: Any
    """A request's session; its standalone channel outlives the request."""
    connection: Any
    """Kept referenced so its ``id`` (the registry key) cannot be reused."""
    namespace: str
    uris: set[str] = field(default_factory=set)


class Notifier:
    """Collects the keys every refresh of the store reports and tells subscribers."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.bus = InMemorySubscriptionBus()
        self.legacy: dict[int, _Subscriber] = {}
        self.listening: dict[int, tuple[str, frozenset[str]]] = {}
        """Open listen streams: request key -> (namespace, URIs)."""
        self._pending: set[Key] = set()
        self._reset = False
        self._guard = threading.Lock()
        store.listeners.append(self._collect)

    def _collect(self, changes: Touched) -> None:  # runs in whatever thread refreshed
        if not self.active:
            return  # nobody to tell; a later subscriber only cares about later changes
        with self._guard:
            self._pending |= changes.keys
            self._reset = self._reset or changes.reset

    @property
    def active(self) -> bool:
        return bool(self.legacy or self.listening)

    def subscribe(self, session: Any, namespace: str, uri: str) -> None:
        conn = _connection(session)
        sub = self.legacy.get(id(conn))
        if sub is None:
            sub = self.legacy[id(conn)] = _Subscriber(session, conn, namespace)
        sub.uris.add(uri)

    def unsubscribe(self, session: Any, uri: str) -> None:
        conn = _connection(session)
        sub = self.legacy.get(id(conn))
        if sub is not None:
            sub.uris.discard(uri)
            if not sub.uris:
                del self.legacy[id(conn)]

    async def flush(self, always: Collection[tuple[str, str]] = ()) -> None:
        """Notify everyone subscribed to a resource the pending changes affect, plus the
        ``(namespace, uri)`` pairs in ``always``."""
        with self._guard:
            keys, reset = self._pending, self._reset
            self._pending, self._reset = set(), False

        def hit(namespace: str, uri: str) -> bool:
            return (namespace, uri) in always or reset or _affects(uri, namespace, keys)

        for sid, sub in list(self.legacy.items()):
            for uri in sorted(sub.uris):
                if hit(sub.namespace, uri):
                    try:
                        await sub.session.send_resource_updated(uri)
                    except Exception:  # the session is gone: forget it
                        log.debug("dropping a closed subscriber session", exc_info=True)
                        self.legacy.pop(sid, None)
                        break
        published: set[str] = set()
        for namespace, uris in list(self.listening.values()):
            for uri in uris:
                if uri not in published and hit(namespace, uri):
                    published.add(uri)
                    await self.bus.publish(ResourceUpdated(uri=uri))

    async def poll_forever(self) -> None:
        while True:
            await anyio.sleep(POLL_SECONDS)
            if not self.active:
                continue
            try:
                await anyio.to_thread.run_sync(self.store.refresh)
            except StoreError as exc:
                log.warning("refresh failed: %s", exc)
                continue
            await self.flush()


class NoonServer(Server[Any]):
    """The SDK's low-level server, advertising ``listChanged`` on tools and resources by default
    (as the official memory server does), whichever transport creates the options."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, resources_changed=True),
            experimental_capabilities,
            extensions,
        )


def _namespace(ctx: ServerRequestContext[Any, Any], default: str) -> str:
    """The request's namespace: the ``X-Noon-Namespace`` header (the HTTP guard puts Nocturne's
    ``X-Namespace`` or ``?namespace=`` there too), else the server's."""
    headers = getattr(ctx.request, "headers", None)
    raw = headers.get(NAMESPACE_HEADER) if headers is not None else None
    if not raw:
        return default
    if not NAMESPACE.match(raw):
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"invalid namespace {raw[:80]!r} (from the X-Noon-Namespace or X-Namespace "
            "header, or ?namespace=): use 1 to 64 letters, digits, '.', '_' or '-'",
        )
    return raw


def _client(ctx: ServerRequestContext[Any, Any]) -> str:
    params = ctx.session.client_params
    if params is not None and params.client_info.name:
        return str(params.client_info.name)[:128]
    return "mcp"


def create_server(
    store: Store,
    settings: Settings,
    families: set[str] | frozenset[str] = frozenset(FAMILIES),
    *,
    instructions: str | None = None,
    name: str = "noon",
) -> NoonServer:
    """A low-level MCP server with the tools and resources of ``families`` on ``store``."""
    unknown = set(families) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown tool families {sorted(unknown)}; known: {sorted(FAMILIES)}")
    served = [load() for key, load in FAMILIES.items() if key in families]
    tools: dict[str, tuple[ToolSpec, Family, ArgumentValidator]] = {}
    resources: dict[str, tuple[ResourceSpec, Family]] = {}
    for family in served:
        for spec in family.tools:
            if spec.name in tools:
                raise ValueError(f"two tools named {spec.name!r}")
            validator = ArgumentValidator(spec.input_schema, hints=family.argument_hints)
            tools[spec.name] = (spec, family, validator)
        for res in family.resources:
            resources[res.uri] = (res, family)
        if instructions is None:
            instructions = family.instructions
    reader = next((f for f in served if f.read_uri is not None), None)
    templates = [t for family in served for t in family.templates]
    notifier = Notifier(store)
    family_uris = {f.name: {uri for uri, (_, g) in resources.items() if g is f} for f in served}

    def tool_context(ctx: ServerRequestContext[Any, Any], family: Family) -> ToolContext:
        namespace = _namespace(ctx, settings.namespace)

        async def changed() -> None:
            await notifier.flush({(namespace, uri) for uri in family_uris[family.name]})

        return ToolContext(
            store=store,
            settings=settings,
            namespace=namespace,
            client=_client(ctx),
            changed=changed,
        )

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=spec.name,
                    title=spec.title,
                    description=spec.description,
                    input_schema=spec.input_schema,
                    output_schema=spec.output_schema,
                    annotations=spec.annotations,
                    execution=types.ToolExecution(task_support="forbidden"),
                )
                for spec, _, _ in tools.values()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> ToolResult:
        entry = tools.get(params.name)
        if entry is None:
            return tool_error(f"MCP error -32602: Tool {params.name} not found")
        spec, family, validator = entry
        args = dict(params.arguments or {})
        problems = validator.problems(args)
        if problems:
            return tool_error(
                "MCP error -32602: Input validation error: Invalid arguments for tool "
                f"{spec.name}: " + "\n".join(problems)
            )
        context = tool_context(ctx, family)
        key = None
        if family.recognises_retries and spec.annotations.idempotent_hint is not True:
            key = retries.request_key(spec.name, args, context.namespace, context.client)
        try:
            with retries.requesting(key):
                return with_notice(await spec.handler(args, context), store)
        except AlreadyWritten as exc:
            svc = service(store)
            done = await anyio.to_thread.run_sync(
                retried.answer, svc, spec, args, context, exc.batch
            )
            return with_notice(done, store)
        except family.refusals as exc:
            return family.refusal(exc)
        except (Unavailable, OSError) as exc:
            log.warning("tool %s failed: %s", spec.name, exc)
            return tool_error(str(exc))
        except MCPError:
            raise
        except Exception as exc:  # a bug: keep serving, say what broke, log the traceback
            log.exception("tool %s crashed", spec.name)
            return tool_error(f"Internal error in {spec.name}: {type(exc).__name__}: {exc}")

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=res.uri,
                    name=res.name,
                    title=res.title,
                    description=res.description,
                    mime_type=res.mime_type,
                )
                for res, _ in resources.values()
            ]
        )

    async def list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=templates)

    def read_text(ctx: ServerRequestContext[Any, Any], uri: str) -> tuple[str, str]:
        """A resource's text and MIME type: a listed resource, or any URI the templates cover."""
        entry = resources.get(uri)
        if entry is not None:
            res, family = entry
            return res.read(tool_context(ctx, family)), res.mime_type
        not_found = f"MCP error -32602: Resource {uri} not found"
        if reader is None or reader.read_uri is None:
            raise MCPError(code=types.INVALID_PARAMS, message=not_found)
        try:
            return reader.read_uri(tool_context(ctx, reader), uri), "text/plain"
        except reader.refusals as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=f"{not_found}: {exc}") from None

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        text, mime_type = await anyio.to_thread.run_sync(lambda: read_text(ctx, uri))
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)]
        )

    async def subscribe(
        ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        notifier.subscribe(ctx.session, _namespace(ctx, settings.namespace), str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        notifier.unsubscribe(ctx.session, str(params.uri))
        return types.EmptyResult()

    listen_handler = ListenHandler(notifier.bus)

    async def listen(
        ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        uris = frozenset(params.notifications.resource_subscriptions or ())
        token = id(ctx)
        notifier.listening[token] = (_namespace(ctx, settings.namespace), uris)
        try:
            return await listen_handler(ctx, params)
        finally:
            notifier.listening.pop(token, None)

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(notifier.poll_forever)
            try:
                yield {}
            finally:
                tg.cancel_scope.cancel()

    return NoonServer(
        name,
        version=package_version(),
        instructions=instructions,
        lifespan=lifespan,
        get_tool_input_schema=lambda n: tools[n][0].input_schema if n in tools else None,
        on_list_tools=list_tools,
        # call_tool may answer with a result's wire form (a dict): the SDK passes it through
        # unvalidated, which spares large results a model round trip (see kg_tools._text).
        on_call_tool=call_tool,  # type: ignore[arg-type]
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_subscriptions_listen=listen,
    )


def initialization_options(server: Server[Any]) -> InitializationOptions:
    """Capabilities as the official memory server advertises them (tools and resources
    ``listChanged``, resources ``subscribe``)."""
    return server.create_initialization_options(
        NotificationOptions(tools_changed=True, resources_changed=True)
    )
