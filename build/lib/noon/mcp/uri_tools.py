"""MCP tools of the URI memory graph: read, create, update, delete, alias, move, triggers,
search, history, rollback and the boot list.

Each tool answers with text written for an LLM plus ``structuredContent`` (ids, versions, URIs)
for programs. Bad arguments get an ``Error: ...`` result that says what to do; nothing is
written then. Writes plan inside ``Store.write`` so their checks hold at the moment of writing.
"""

from __future__ import annotations

import difflib
import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import jsonschema
import mcp.types as types

from noon.core.elements import CONTENT
from noon.core.ops import Draft, Op
from noon.errors import NoonError
from noon.graph import plan, views
from noon.graph.model import Graph, live_text, version_id
from noon.graph.plan import GraphError
from noon.graph.quote import QuoteError, append_text, replace_quoted
from noon.graph.search import snippet, tokens
from noon.graph.uri import SYSTEM, Uri, UriError, node_view, parse
from noon.kg import live as kg_live
from noon.kg import uri as kg_uri
from noon.mcp.graph_service import GraphService, service
from noon.mcp.spec import ResourceSpec, ToolContext, ToolSpec

INSTRUCTIONS = """\
noon is your long-term memory, shared by all your sessions on all of this person's machines.
Memories are addressed by URIs like core://agent/identity; a memory can have children, aliases
(several URIs for one memory), a priority (0 = most important) and a disclosure (WHEN to
recall it).

Workflow:
1. At the start of every session (and after your context was compacted) call
   read_memory("system://boot") and read it fully before answering.
2. Before answering about something memory may cover, search_memory with words from the
   conversation, then read_memory the best hits. Follow children and glossary links.
3. Before creating a memory, search for an existing one on the topic. Prefer update_memory
   over create_memory: one dense, current memory beats several overlapping ones.
4. Edit by quoting: read the memory, then update_memory with old_string copied from it and
   the new_string to put there (or append). Pass expected_version from your read to refuse
   edits to a memory that changed meanwhile.
5. Write when something would change your future behaviour: corrections, the person's
   preferences, decisions, lessons. Give every memory a disclosure that fires BEFORE you would
   need it ("When the user asks about deployment").
6. Move or rename with move_memory (one atomic step); never delete and recreate.
Views: system://boot, system://index/<domain>, system://recent[/N], system://glossary,
system://diagnostic/<domain>, system://conflicts, system://orphans, system://history/<uri>.
Memories edited concurrently on two machines show a CONCURRENT VERSIONS note: merge them with
update_memory.
"""

RECENT_DEFAULT = 10
RECENT_MAX = 100


class ToolInputError(NoonError, ValueError):
    pass


# -- schemas -------------------------------------------------------------------------------

_URI = {"type": "string", "minLength": 1, "maxLength": 4096}
_PRIO = {
    "type": "integer",
    "minimum": 0,
    "maximum": 1000,
    "description": "Lower = recalled first. 0 for the few memories that define you.",
}
_DISC = {
    "type": "string",
    "maxLength": 4096,
    "description": "WHEN to recall this memory: an outside signal or an intent, e.g. "
    "'When the user asks about deploying noon'.",
}
_KEYWORDS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 100},
    "maxItems": 100,
}
_VERSION = {
    "type": "string",
    "maxLength": 200,
    "description": "The Version shown by read_memory; the edit is refused if the memory "
    "changed since.",
}


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


def _out(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props}


_S = {"type": "string"}
_NS = {"type": ["string", "null"]}
_I = {"type": "integer"}
_NI = {"type": ["integer", "null"]}
_B = {"type": "boolean"}
_LS = {"type": "array", "items": {"type": "string"}}


def _annotations(read_only: bool, destructive: bool, idempotent: bool) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


# -- helpers -------------------------------------------------------------------------------


def _text_result(text: str, data: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=data, is_error=False
    )


def _error(message: str) -> types.CallToolResult:
    text = message if message.startswith("Error:") else f"Error: {message}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def check_args(name: str, schema: dict[str, Any], args: dict[str, Any] | None) -> dict[str, Any]:
    """Validate arguments against the tool's schema with messages an agent can act on."""
    args = dict(args or {})
    props = schema["properties"]
    unknown = [k for k in args if k not in props]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(
                k, props, n=1, cutoff=0.5
            ) or difflib.get_close_matches(k.lower().replace("-", "_"), props, n=1, cutoff=0.5)
            hints.append(f"'{k}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise ToolInputError(
            f"{name} got unknown argument(s) {', '.join(hints)}. Valid arguments: "
            f"{', '.join(props)}."
        )
    missing = [k for k in schema.get("required", []) if k not in args]
    if missing:
        raise ToolInputError(f"{name} is missing required argument(s): {', '.join(missing)}.")
    try:
        jsonschema.validate(args, schema)
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path) or "arguments"
        raise ToolInputError(f"{name}: invalid {where}: {exc.message}") from None
    return args


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[types.CallToolResult]]


def _tool(
    name: str, schema: dict[str, Any], writes: bool
) -> Callable[[Callable[[GraphService, dict[str, Any], ToolContext], tuple[str, dict]]], Handler]:
    """Wrap a blocking implementation: validate, run in a worker thread, map refusals to
    error results, and notify subscribers after a write that changed something."""

    def wrap(
        impl: Callable[[GraphService, dict[str, Any], ToolContext], tuple[str, dict]],
    ) -> Handler:
        @functools.wraps(impl)
        async def handler(args: dict[str, Any], ctx: ToolContext) -> types.CallToolResult:
            try:
                clean = check_args(name, schema, args)
                svc = service(ctx.store)
                text, data = await anyio.to_thread.run_sync(impl, svc, clean, ctx)
            except (ToolInputError, GraphError, UriError, QuoteError) as exc:
                return _error(str(exc))
            if writes and data.get("written", True):
                await ctx.changed()
            return _text_result(text, data)

        return handler

    return wrap


def _write(
    svc: GraphService, ctx: ToolContext, fn: Callable[[Graph], tuple[list[Draft], Any]]
) -> tuple[list[Op], Any]:
    return svc.write(fn, ctx.client)


# -- read_memory ---------------------------------------------------------------------------

READ_SCHEMA = _schema(
    {
        "uri": {
            **_URI,
            "description": "A memory URI (core://agent) or a view (system://boot, "
            "system://index/core, system://recent/20, ...).",
        }
    },
    ["uri"],
)


def _domain_arg(svc: GraphService, ns: str, rest: str, view: str) -> str:
    domains = svc.graph.domains(ns)
    if not rest:
        raise GraphError(
            f"{view} requires a domain (e.g. system://{view}/core). Domains with "
            f"memories: {', '.join(domains) or '(none yet)'}."
        )
    if rest not in domains:
        raise GraphError(
            f"Unknown domain '{rest}'. Domains with memories: {', '.join(domains) or '(none yet)'}."
        )
    return rest


def read_view(svc: GraphService, ns: str, uri_text: str) -> tuple[str, dict[str, Any]]:
    g, now = svc.graph, _now_ms()
    rest = uri_text.strip()[len("system://") :].strip()
    head, _, tail = rest.partition("/")
    tail = tail.strip("/") if head != "history" else tail.strip()
    data: dict[str, Any] = {"uri": uri_text.strip(), "view": head}
    if head == "boot" and not tail:
        return views.boot(g, svc.glossary, ns, now), data
    if head == "index":
        return views.index(g, ns, _domain_arg(svc, ns, tail, "index"), now), data
    if head == "diagnostic":
        return views.diagnostic(g, ns, _domain_arg(svc, ns, tail, "diagnostic"), now), data
    if head == "recent":
        n = RECENT_DEFAULT
        if tail:
            try:
                n = int(tail)
            except ValueError:
                raise GraphError(
                    f"Invalid number in URI '{uri_text}'. Usage: system://recent or "
                    "system://recent/N (e.g. system://recent/20)"
                ) from None
        return views.recent(g, ns, max(1, min(RECENT_MAX, n)), n, now), data
    if head == "glossary" and not tail:
        return views.glossary_view(g, ns, now), data
    if head == "conflicts" and not tail:
        return views.conflicts(g, ns), data
    if head == "orphans" and not tail:
        return views.orphans(g, ns), data
    if head == "history":
        node, uri, _ = plan.locate(g, ns, tail)
        text, rows = views.history(g, ns, node, str(uri or node_view(node)), 50)
        return text, {**data, "node_id": node, "versions": rows}
    if head == "node" and tail:
        node, _, _ = plan.locate(g, ns, uri_text)
        read = views.memory(g, svc.glossary, ns, node, None, None)
        return read.text, {**data, **read.data}
    raise GraphError(
        f"Unknown view '{uri_text.strip()}'. Views: system://boot, system://index/<domain>, "
        "system://recent[/N], system://glossary, system://diagnostic/<domain>, "
        "system://conflicts, system://orphans, system://history/<uri>, system://node/<id>."
    )


def read(svc: GraphService, ns: str, uri_text: str) -> tuple[str, dict[str, Any]]:
    if uri_text.strip().lower().startswith(f"{SYSTEM}://"):
        return read_view(svc, ns, uri_text)
    name = kg_uri.entity_name(uri_text.strip())
    if name is not None:
        return _read_entity(svc, ns, name)
    uri = parse(uri_text)
    g = svc.graph
    if uri.is_root:
        return _read_root(svc, ns, uri)
    found = g.resolve(ns, uri)
    if found is None:
        raise GraphError(
            f"URI '{uri}' not found. Search with search_memory, or read "
            f"system://index/{uri.domain}."
        )
    node, pl = found
    r = views.memory(g, svc.glossary, ns, node, uri, pl)
    return r.text, r.data


def _read_entity(svc: GraphService, ns: str, name: str) -> tuple[str, dict[str, Any]]:
    """``kg://<name>``: a knowledge-graph entity, read-only (edited with the kg tools)."""
    index = kg_live.index_for(svc.store)
    fold = svc.store.fold
    if not name:
        return kg_uri.render_index(fold, ns, index), {"uri": kg_uri.SCHEME}
    text = kg_uri.render_entity(fold, ns, name, index)
    if text is None:
        raise GraphError(f"No entity named '{name}' in the knowledge graph.")
    return text, {"uri": kg_uri.SCHEME + name}


def _read_root(svc: GraphService, ns: str, uri: Uri) -> tuple[str, dict[str, Any]]:
    kids = svc.graph.children(ns, f"@{uri.domain}")
    lines = [
        views.RULE,
        "",
        f"MEMORY: {uri}",
        f"Root of domain '{uri.domain}'.",
        "",
        views.RULE,
        "",
        "CHILD MEMORIES (Use 'read_memory' with URI to access)",
        "",
    ]
    if not kids:
        lines.append("(empty: create the first memory here with create_memory)")
    for k in kids:
        lines += [
            f"- URI: {uri.child(k.name)}  ",
            f"  Priority: {k.priority}  ",
            f"  When to recall: {k.disclosure or '(not set)'}  ",
            "",
        ]
    return "\n".join(lines) + "\n", {"uri": str(uri), "children": [k.name for k in kids]}


@_tool("read_memory", READ_SCHEMA, writes=False)
def _read_memory(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    return svc.read(lambda s: read(s, ctx.namespace, args["uri"]))


# -- create_memory -------------------------------------------------------------------------

CREATE_SCHEMA = _schema(
    {
        "parent_uri": {
            **_URI,
            "description": "Where to put it: an existing memory, or a domain "
            "root like 'core://'. Choose the parent you naturally read before you "
            "need this memory.",
        },
        "content": {"type": "string", "minLength": 1, "maxLength": 1_000_000},
        "priority": _PRIO,
        "disclosure": _DISC,
        "title": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "The last URI segment: letters, digits, '_', '-', '.'. Omitted: "
            "the next free number.",
        },
    },
    ["parent_uri", "content", "priority", "disclosure"],
)


@_tool("create_memory", CREATE_SCHEMA, writes=True)
def _create_memory(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    parent = parse(args["parent_uri"])

    def fn(g: Graph) -> tuple[list[Draft], tuple[str, Uri]]:
        drafts, node, uri = plan.create(
            g,
            ctx.namespace,
            parent,
            args.get("title"),
            args["content"],
            args["priority"],
            args["disclosure"],
        )
        return drafts, (node, uri)

    ops, (node, uri) = _write(svc, ctx, fn)
    related = svc.read(
        lambda s: similar(s, ctx.namespace, node, args.get("title") or "", args["content"])
    )
    text = f"Success: Memory created at '{uri}'\n\n"
    if related:
        text += (
            f"[POSSIBLE DUPLICATE] These memories share most of its words: {', '.join(related)}. "
            "If one covers the same topic, merge this into it with update_memory and delete "
            "this one: one current memory beats two overlapping ones.\n"
        )
    text += (
        "[SYSTEM REMINDER] Link it so it is found: add_alias where another context should "
        "recall it, manage_triggers for words from existing memories that should point here.\n"
        f"[HOLD ON] Do you know what '{parent}' says? If this new memory contradicts it, merge "
        "them with update_memory instead of keeping both."
    )
    return text, {
        "uri": str(uri),
        "node_id": node,
        "version": version_id(ops[0]),
        "related": related,
    }


SIMILAR_WORDS = 40
"""Words of a new memory compared with existing ones for the duplicate hint."""


def similar(svc: GraphService, ns: str, node: str, title: str, content: str) -> list[str]:
    """Existing memories matching at least half the distinct words of a new one. Skipped while
    the search index is still being built, so a create never waits for it."""
    if svc.search.pending or svc.search.dirty.reset:
        return []
    words = list(dict.fromkeys(tokens(f"{title} {content}")))[:SIMILAR_WORDS]
    if len(words) < 2:
        return []
    g = svc.graph

    def accept(n: str) -> bool:
        return n != node and g.is_live(ns, n) and bool(g.uris(ns, n, 1))

    hits = svc.search.search(ns, " ".join(words), 3, accept)
    return [str(g.uris(ns, h.node)[0][0]) for h in hits if len(h.matched) * 2 >= len(words)]


# -- update_memory -------------------------------------------------------------------------

UPDATE_SCHEMA = _schema(
    {
        "uri": _URI,
        "old_string": {
            "type": "string",
            "maxLength": 1_000_000,
            "description": "Exact text copied from the memory (must match one place).",
        },
        "new_string": {
            "type": "string",
            "maxLength": 1_000_000,
            "description": "Replacement for old_string ('' deletes it).",
        },
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence of old_string.",
        },
        "append": {
            "type": "string",
            "maxLength": 1_000_000,
            "description": "Text to add at the end (instead of old/new_string).",
        },
        "priority": _PRIO,
        "disclosure": _DISC,
        "expected_version": _VERSION,
    },
    ["uri"],
)


@_tool("update_memory", UPDATE_SCHEMA, writes=True)
def _update_memory(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    old, new, add = args.get("old_string"), args.get("new_string"), args.get("append")
    prio, disc = args.get("priority"), args.get("disclosure")
    label = args["uri"].strip()
    if (old is not None or new is not None) and add is not None:
        raise ToolInputError(
            "Cannot use both old_string/new_string (patch) and append at the same time. Pick one."
        )
    if old is not None and new is None:
        raise ToolInputError(
            'old_string provided without new_string. To delete a section, use new_string="".'
        )
    if new is not None and old is None:
        raise ToolInputError(
            "new_string provided without old_string. Both are required for patch mode."
        )
    if old is not None and old == new:
        raise ToolInputError("old_string and new_string are identical. No change would be made.")
    if add is not None and not add.strip():
        raise ToolInputError(f"Empty append for '{label}'. Provide non-empty text to append.")
    if old is None and add is None and prio is None and disc is None:
        raise ToolInputError(
            f"No update fields provided for '{label}'. Use patch mode (old_string + "
            "new_string), append mode (append), or metadata fields (priority/disclosure)."
        )
    if old is None and args.get("replace_all") is not None:
        raise ToolInputError("replace_all only applies with old_string/new_string.")
    ns = ctx.namespace
    notes: list[str] = []

    def fn(g: Graph) -> tuple[list[Draft], str]:
        node, uri, pl = plan.locate(g, ns, label)
        shown = str(uri) if uri else label
        plan.check_version(g, ns, node, uri or Uri("system", ()), args.get("expected_version"))
        drafts: list[Draft] = []
        if old is not None or add is not None:
            current = plan.current_text(g, ns, node, uri or Uri("system", ()))
            if old is not None:
                try:
                    edit = replace_quoted(
                        current, old, new or "", replace_all=bool(args.get("replace_all"))
                    )
                except QuoteError as exc:
                    raise GraphError(f"In '{shown}': {exc}") from None
                text = edit.text
                if edit.normalised:
                    notes.append(
                        "Matched after normalising quotes, dashes or whitespace; only "
                        "the matched span changed."
                    )
            else:
                text = append_text(current, add or "")
            el = g.content(ns, node)
            if text == current and not (el is not None and (el.conflicted or el.deleted)):
                raise GraphError(
                    f"Replacement produced identical content at '{shown}'. Check "
                    "for subtle whitespace differences."
                )
            drafts.append(plan.set_text(ns, node, text))
        if prio is not None or disc is not None:
            if pl is None:
                raise GraphError(
                    "priority and disclosure belong to a placement: address the "
                    "memory by a URI, not by its id."
                )
            plan.check_priority(prio if prio is not None else pl.priority)
            drafts.append(
                plan.place(
                    g,
                    ns,
                    pl.parent,
                    pl.key_name,
                    node,
                    prio if prio is not None else pl.priority,
                    disc if disc is not None else pl.disclosure,
                )
            )
        return drafts, shown

    ops, shown = _write(svc, ctx, fn)
    content_op = next((o for o in ops if o.el[0] == CONTENT), None)
    version = version_id(content_op) if content_op else None
    if version is None:
        version = svc.read(lambda s: _current_version(s, ns, label))
    text = f"Success: Memory at '{shown}' updated (version {version})"
    if notes:
        text += "\n\n[SYSTEM NOTICE] " + " ".join(notes)
    return text, {"uri": shown, "version": version}


def _current_version(svc: GraphService, ns: str, label: str) -> str | None:
    node, _, _ = plan.locate(svc.graph, ns, label)
    el = svc.graph.content(ns, node)
    return version_id(el.winner) if el is not None else None


# -- delete_memory -------------------------------------------------------------------------

DELETE_SCHEMA = _schema(
    {
        "uri": _URI,
        "recursive": {
            "type": "boolean",
            "description": "Also delete every memory below that no "
            "other path reaches. Without it, such a delete is refused.",
        },
    },
    ["uri"],
)


@_tool("delete_memory", DELETE_SCHEMA, writes=True)
def _delete_memory(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    label = args["uri"].strip()

    def fn(g: Graph) -> tuple[list[Draft], tuple[int, str]]:
        node, _, pl = plan.locate(g, ctx.namespace, label)
        drafts, deleted = plan.delete(
            g, ctx.namespace, node, label, pl, bool(args.get("recursive"))
        )
        return drafts, (deleted, node)

    _, (deleted, node) = _write(svc, ctx, fn)
    if deleted == 0:
        text = (
            f"Success: Path '{label}' removed. The memory stays reachable through its other "
            "aliases."
        )
    else:
        text = f"Success: Memory '{label}' deleted."
        if deleted > 1:
            text += f" (Recursively deleted {deleted - 1} descendant memory(ies))"
        text += " Its versions stay in system://history until compaction."
    return text, {"uri": label, "node_id": node, "deleted": deleted}


# -- add_alias / move_memory ---------------------------------------------------------------

ALIAS_SCHEMA = _schema(
    {
        "new_uri": {**_URI, "description": "The additional URI (its parent must exist)."},
        "target_uri": {**_URI, "description": "The memory to alias (a URI or system://node/<id>)."},
        "priority": _PRIO,
        "disclosure": _DISC,
    },
    ["new_uri", "target_uri"],
)


@_tool("add_alias", ALIAS_SCHEMA, writes=True)
def _add_alias(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    new_uri = parse(args["new_uri"])

    def fn(g: Graph) -> tuple[list[Draft], str]:
        node, _, pl = plan.locate(g, ctx.namespace, args["target_uri"])
        prio = args.get("priority", pl.priority if pl else 0)
        disc = args.get("disclosure", pl.disclosure if pl else "")
        return [plan.alias(g, ctx.namespace, new_uri, node, prio, disc)], node

    _, node = _write(svc, ctx, fn)
    text = (
        f"Success: Alias '{new_uri}' now points to same memory as "
        f"'{args['target_uri'].strip()}' (its children come along).\n\n"
        f"[HOLD ON] Do you know what '{new_uri.parent()}' says? Make sure this memory fits "
        "there."
    )
    return text, {"uri": str(new_uri), "node_id": node}


MOVE_SCHEMA = _schema(
    {
        "uri": {
            **_URI,
            "description": "The memory to move (a URI, or system://node/<id> to place an orphan).",
        },
        "new_uri": {**_URI, "description": "Its new URI (the parent must exist; can rename)."},
        "priority": _PRIO,
        "disclosure": _DISC,
    },
    ["uri", "new_uri"],
)


@_tool("move_memory", MOVE_SCHEMA, writes=True)
def _move_memory(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    new_uri = parse(args["new_uri"])

    def fn(g: Graph) -> tuple[list[Draft], str]:
        node, _, pl = plan.locate(g, ctx.namespace, args["uri"])
        drafts = plan.move(
            g, ctx.namespace, node, pl, new_uri, args.get("priority"), args.get("disclosure")
        )
        return drafts, node

    _, node = _write(svc, ctx, fn)
    text = (
        f"Success: Memory moved from '{args['uri'].strip()}' to '{new_uri}' (children, "
        "keywords, history and boot membership come along)."
    )
    return text, {"uri": str(new_uri), "old_uri": args["uri"].strip(), "node_id": node}


# -- manage_triggers -----------------------------------------------------------------------

TRIGGERS_SCHEMA = _schema(
    {
        "uri": _URI,
        "add": {
            **_KEYWORDS,
            "description": "Keywords to bind: words that already appear in other "
            "memories and should link here.",
        },
        "remove": {**_KEYWORDS, "description": "Keywords to unbind."},
    },
    ["uri"],
)


@_tool("manage_triggers", TRIGGERS_SCHEMA, writes=True)
def _manage_triggers(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    label = args["uri"].strip()

    def fn(g: Graph) -> tuple[list[Draft], tuple[str, dict[str, list[str]]]]:
        node, _, _ = plan.locate(g, ctx.namespace, label)
        drafts, report = plan.triggers(
            g, ctx.namespace, node, args.get("add", []), args.get("remove", [])
        )
        return drafts, (node, report)

    ops, (node, report) = _write(svc, ctx, fn)
    current = svc.read(lambda s: s.graph.keywords_of(ctx.namespace, node))
    lines = [f"Keywords for '{label}':"]
    for key, title in (
        ("added", "Added"),
        ("existing", "Already existed (skipped)"),
        ("removed", "Removed"),
        ("missing", "Not found (skipped)"),
    ):
        if report[key]:
            lines.append(f"  {title}: {', '.join(report[key])}")
    lines.append(f"  Current: [{', '.join(current)}]" if current else "  Current: (none)")
    return "\n".join(lines), {
        "uri": label,
        "node_id": node,
        **report,
        "current": current,
        "written": bool(ops),
    }


# -- search_memory -------------------------------------------------------------------------

SEARCH_SCHEMA = _schema(
    {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1000,
            "description": "Words to look for (lexical, not semantic): ranked over content, "
            "URIs, disclosures and keywords; prefixes match too.",
        },
        "domain": {"type": "string", "maxLength": 32, "description": "Only this domain."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    },
    ["query"],
)


def search(
    svc: GraphService, ns: str, query: str, domain: str | None, limit: int
) -> tuple[str, dict]:
    g = svc.graph
    if domain is not None:
        domain = domain.strip().lower()
        if domain not in g.domains(ns):
            raise GraphError(
                f"Unknown domain '{domain}'. Domains with memories: "
                f"{', '.join(g.domains(ns)) or '(none yet)'}."
            )

    def accept(node: str) -> bool:
        if not g.is_live(ns, node):
            return False
        us = g.uris(ns, node)
        return bool(us) and (domain is None or any(u.domain == domain for u, _ in us))

    hits = svc.search.search(ns, query, limit, accept)
    if not hits:
        where = f"in '{domain}'" if domain else "across all domains"
        return f"No matching memories found {where}.", {"query": query, "results": []}
    lines = [f"Found {len(hits)} matches for '{query}':", ""]
    results = []
    for h in hits:
        us = g.uris(ns, h.node)
        if domain:
            us = [u for u in us if u[0].domain == domain]
        uri, prio = us[0]
        found = g.resolve(ns, uri)
        disc = found[1].disclosure if found and found[1] else ""
        el = g.content(ns, h.node)
        snip = snippet(live_text(el) if el else "", query, h.matched)
        lines.append(f"- {uri}  (score {h.score})")
        lines.append(f"  Priority: {prio}")
        if disc:
            lines.append(f"  Disclosure: {disc}")
        lines += [f"  {snip}", ""]
        results.append(
            {
                "uri": str(uri),
                "node_id": h.node,
                "score": h.score,
                "priority": prio,
                "disclosure": disc,
                "version": version_id(el.winner) if el else None,
            }
        )
    return "\n".join(lines), {"query": query, "results": results}


@_tool("search_memory", SEARCH_SCHEMA, writes=False)
def _search_memory(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    return svc.read(
        lambda s: search(s, ctx.namespace, args["query"], args.get("domain"), args.get("limit", 10))
    )


# -- history / rollback --------------------------------------------------------------------

HISTORY_SCHEMA = _schema(
    {"uri": _URI, "limit": {"type": "integer", "minimum": 1, "maximum": 1000}}, ["uri"]
)


@_tool("memory_history", HISTORY_SCHEMA, writes=False)
def _memory_history(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    def fn(s: GraphService) -> tuple[str, dict]:
        node, uri, _ = plan.locate(s.graph, ctx.namespace, args["uri"])
        text, rows = views.history(
            s.graph, ctx.namespace, node, str(uri or node_view(node)), args.get("limit", 20)
        )
        return text, {"uri": args["uri"].strip(), "node_id": node, "versions": rows}

    return svc.read(fn)


ROLLBACK_SCHEMA = _schema(
    {
        "uri": _URI,
        "version": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "A version id from memory_history, e.g. 'laptop:42'.",
        },
        "expected_version": _VERSION,
    },
    ["uri", "version"],
)


@_tool("rollback_memory", ROLLBACK_SCHEMA, writes=True)
def _rollback_memory(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    label = args["uri"].strip()

    def fn(g: Graph) -> tuple[list[Draft], str]:
        node, uri, _ = plan.locate(g, ctx.namespace, label)
        u = uri or Uri("system", ())
        plan.check_version(g, ctx.namespace, node, u, args.get("expected_version"))
        return [plan.rollback(g, ctx.namespace, node, u, args["version"])], node

    ops, node = _write(svc, ctx, fn)
    version = version_id(ops[0])
    return (
        f"Success: '{label}' rolled back to the text of version {args['version']} (new "
        f"version {version}; the history keeps every version).",
        {"uri": label, "node_id": node, "version": version, "restored": args["version"]},
    )


# -- manage_boot ---------------------------------------------------------------------------

BOOT_SCHEMA = _schema(
    {
        "add": {
            "type": "array",
            "items": _URI,
            "maxItems": 100,
            "description": "Memory URIs to load at every session start (system://boot).",
        },
        "remove": {"type": "array", "items": _URI, "maxItems": 100},
    },
    [],
)


@_tool("manage_boot", BOOT_SCHEMA, writes=True)
def _manage_boot(svc: GraphService, args: dict[str, Any], ctx: ToolContext) -> tuple[str, dict]:
    ns = ctx.namespace

    def fn(g: Graph) -> tuple[list[Draft], None]:
        add = [plan.locate(g, ns, u)[0] for u in args.get("add", [])]
        remove = [plan.locate(g, ns, u)[0] for u in args.get("remove", [])]
        return plan.boot(g, ns, add, remove), None

    ops, _ = _write(svc, ctx, fn)

    def listing(s: GraphService) -> list[str]:
        return sorted(views.show_uri(s.graph, ns, n) for n in s.graph.boot_nodes(ns))

    current = svc.read(listing)
    text = "Boot memories (loaded by system://boot, by node, so they survive moves):\n"
    text += "\n".join(f"- {u}" for u in current) if current else "(none)"
    return text, {"boot": current, "written": bool(ops)}


# -- tables --------------------------------------------------------------------------------

_MEMORY_OUT = _out(
    {
        "uri": _S,
        "node_id": _S,
        "version": _NS,
        "aliases": _LS,
        "priority": _NI,
        "disclosure": _NS,
        "keywords": _LS,
        "conflicted": _B,
        "deleted": _B,
        "heads": _LS,
        "children": _LS,
        "view": _S,
    }
)

URI_TOOLS: list[ToolSpec] = [
    ToolSpec(
        "read_memory",
        "Read Memory",
        "Read a memory by URI (e.g. core://agent), or a generated view: system://boot (start "
        "every session with it), system://index/<domain>, system://recent[/N], "
        "system://glossary, system://diagnostic/<domain>, system://conflicts, system://orphans, "
        "system://history/<uri>, system://node/<id>. Shows content, version, aliases, "
        "keywords, glossary links and children with their disclosures. Same Memory ID = same "
        "memory (alias).",
        READ_SCHEMA,
        _MEMORY_OUT,
        _annotations(True, False, True),
        _read_memory,
    ),
    ToolSpec(
        "create_memory",
        "Create Memory",
        "Create a memory under parent_uri (an existing memory or a domain root like "
        "'core://'). Search first: if a memory on the topic exists, update it instead. "
        "disclosure says WHEN to recall it and must fire before you would need it. priority: "
        "lower = recalled first.",
        CREATE_SCHEMA,
        _out({"uri": _S, "node_id": _S, "version": _S, "related": _LS}),
        _annotations(False, False, False),
        _create_memory,
    ),
    ToolSpec(
        "update_memory",
        "Update Memory",
        "Edit a memory you have read: patch (old_string copied exactly from the memory, "
        "new_string to put there; must match one place unless replace_all), or append; and/or "
        "set priority/disclosure of this URI's placement. There is no full overwrite. Pass "
        "expected_version (from read_memory) to refuse the edit if the memory changed since. "
        "Any edit settles concurrent versions.",
        UPDATE_SCHEMA,
        _out({"uri": _S, "version": _NS}),
        _annotations(False, True, False),
        _update_memory,
    ),
    ToolSpec(
        "delete_memory",
        "Delete Memory",
        "Remove one URI of a memory. If it was the memory's last URI the memory is deleted "
        "(history kept until compaction). Refused when memories below would become "
        "unreachable, unless recursive=true. Read it first and judge by content.",
        DELETE_SCHEMA,
        _out({"uri": _S, "node_id": _S, "deleted": _I}),
        _annotations(False, True, True),
        _delete_memory,
    ),
    ToolSpec(
        "add_alias",
        "Add Alias",
        "Give a memory another URI (not a copy: same memory, its children come along), with "
        "its own priority and disclosure for that context.",
        ALIAS_SCHEMA,
        _out({"uri": _S, "node_id": _S}),
        _annotations(False, False, False),
        _add_alias,
    ),
    ToolSpec(
        "move_memory",
        "Move Memory",
        "Move or rename a memory in one atomic step (new URI + removal of the old one); its "
        "children, keywords, history and boot membership follow. Also places an orphan "
        "(uri=system://node/<id>).",
        MOVE_SCHEMA,
        _out({"uri": _S, "old_uri": _S, "node_id": _S}),
        _annotations(False, True, False),
        _move_memory,
    ),
    ToolSpec(
        "manage_triggers",
        "Manage Triggers",
        "Bind or unbind glossary keywords to a memory. Wherever a bound word appears in "
        "another memory being read, a link here is shown. Use words that already occur in "
        "your memories; see system://glossary.",
        TRIGGERS_SCHEMA,
        _out(
            {
                "uri": _S,
                "node_id": _S,
                "added": _LS,
                "existing": _LS,
                "removed": _LS,
                "missing": _LS,
                "current": _LS,
                "written": _B,
            }
        ),
        _annotations(False, False, True),
        _manage_triggers,
    ),
    ToolSpec(
        "search_memory",
        "Search Memory",
        "Ranked full-text search (lexical, not semantic) over memory content, URIs, "
        "disclosures and keywords, optionally in one domain. Use words from the conversation; "
        "read the best hits with read_memory.",
        SEARCH_SCHEMA,
        _out({"query": _S, "results": {"type": "array", "items": {"type": "object"}}}),
        _annotations(True, False, True),
        _search_memory,
    ),
    ToolSpec(
        "memory_history",
        "Memory History",
        "List a memory's kept versions, newest first, with who wrote each (client and "
        "machine) and when. Roll back with rollback_memory.",
        HISTORY_SCHEMA,
        _out({"uri": _S, "node_id": _S, "versions": {"type": "array"}}),
        _annotations(True, False, True),
        _memory_history,
    ),
    ToolSpec(
        "rollback_memory",
        "Rollback Memory",
        "Restore the text of an earlier version (from memory_history) as a new version. "
        "Nothing is lost: the history keeps every version.",
        ROLLBACK_SCHEMA,
        _out({"uri": _S, "node_id": _S, "version": _S, "restored": _S}),
        _annotations(False, True, False),
        _rollback_memory,
    ),
    ToolSpec(
        "manage_boot",
        "Manage Boot Memories",
        "Add or remove memories loaded by system://boot at every session start (kept by "
        "memory, so moves do not break it). Without arguments, lists them.",
        BOOT_SCHEMA,
        _out({"boot": _LS, "written": _B}),
        _annotations(False, False, True),
        _manage_boot,
    ),
]


def _resource(uri: str) -> Callable[[ToolContext], str]:
    def read_resource(ctx: ToolContext) -> str:
        return service(ctx.store).read(lambda s: read(s, ctx.namespace, uri)[0])

    return read_resource


URI_RESOURCES: list[ResourceSpec] = [
    ResourceSpec(
        "system://boot",
        "boot",
        "Boot memories",
        "The memories every session starts with, plus recent changes.",
        "text/plain",
        _resource("system://boot"),
    ),
    ResourceSpec(
        "system://recent",
        "recent",
        "Recently modified memories",
        "The ten most recently modified memories.",
        "text/plain",
        _resource("system://recent"),
    ),
    ResourceSpec(
        "system://glossary",
        "glossary",
        "Glossary",
        "Every glossary keyword and the memories it links to.",
        "text/plain",
        _resource("system://glossary"),
    ),
    ResourceSpec(
        "system://conflicts",
        "conflicts",
        "Conflicts",
        "Memories edited concurrently on different machines.",
        "text/plain",
        _resource("system://conflicts"),
    ),
    ResourceSpec(
        "system://orphans",
        "orphans",
        "Orphans",
        "Memories no domain root reaches; place them with move_memory.",
        "text/plain",
        _resource("system://orphans"),
    ),
]
