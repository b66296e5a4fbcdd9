"""The URI-graph tools that write (update_memory has its own module): create, delete, alias, move,
glossary triggers, rollback and the boot list.

Each is an argument model and the text an agent reads around a use case of :mod:`noon.app`
(which plans inside ``Store.write``, so its checks hold at the moment of writing), plus the
hints only agents get (possible duplicates, keywords no memory mentions).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from noon.app import memories, versions
from noon.graph import memory_view
from noon.graph.reader import live_text
from noon.graph.search import tokens
from noon.graph.uri import Uri, parse
from noon.mcp.spec import ToolContext, Tools, tool_hints
from noon.mcp.uri_base import (
    Args,
    Disclosure,
    Keywords,
    LongText,
    Out,
    Priority,
    Reply,
    UriText,
    Version,
    actor,
    uri_tool,
)
from noon.store.access import GraphService

tools = Tools()
SIMILAR_WORDS = 40
"""Words of a new memory compared with existing ones for the duplicate hint."""
KEYWORD_CANDIDATES = 20
"""Memories checked for a new keyword (the best search hits for it)."""


def _hold_on(uri: Uri, advice: str) -> str:
    """The nudge to read the parent a memory lands under; a domain root has nothing to read."""
    return "" if uri.is_root else f"\n[HOLD ON] Do you know what '{uri}' says? {advice}"


# -- create_memory ---------------------------------------------------------------------------


class CreateArgs(Args):
    parent_uri: Annotated[
        UriText,
        Field(
            description="Where to put it: an existing memory, or a domain root like 'core://'. "
            "Choose the parent you naturally read before you need this memory."
        ),
    ]
    content: Annotated[LongText, Field(min_length=1)]
    priority: Priority
    disclosure: Disclosure
    title: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=128,
                description="The last URI segment: letters, digits, '_', '-', '.'. Omitted: the "
                "next free number.",
            ),
        ]
        | None
    ) = None


class CreateOut(Out):
    uri: str
    memory_id: str
    version: str
    related: list[str]


def similar(
    svc: GraphService, ns: str, node: str, title: str, content: str, folded: bool = True
) -> list[str]:
    """Existing memories matching at least half the distinct words of a new one (``folded``:
    the new one is in the read model already)."""
    words = list(dict.fromkeys(tokens(f"{title} {content}")))[:SIMILAR_WORDS]
    if len(words) < 2:
        return []
    g = svc.graph

    def accept(n: str) -> bool:
        return g.is_live(ns, n) and bool(g.uris(ns, n, 1))

    hits = svc.search.related(ns, words, 3, accept, own=node, own_folded=folded)
    return [str(g.uris(ns, h.node)[0][0]) for h in hits]


@uri_tool(
    tools,
    title="Create Memory",
    description="Create a memory under parent_uri (an existing memory or a domain root like "
    "'core://'). Search first: if a memory on the topic exists, update it instead. disclosure "
    "says WHEN to recall it and must fire before you would need it. priority: lower = recalled "
    "first.",
    args=CreateArgs,
    output=CreateOut,
    annotations=tool_hints(read_only=False, destructive=False, idempotent=False),
    writes=True,
)
def create_memory(svc: GraphService, args: CreateArgs, ctx: ToolContext) -> Reply:
    parent = parse(args.parent_uri)
    title = args.title or ""
    hinted: list[list[str]] = []
    failed: list[Exception] = []

    def while_synced(node: str) -> None:
        # The hint is made while the new memory is fsync'd (which waits without the
        # interpreter): it reads the other memories as the write found them under its lock,
        # the new one not yet folded (the hint passes over it anyway).
        try:
            hinted.append(
                svc.read(
                    lambda s: similar(s, ctx.namespace, node, title, args.content, False),
                    refresh=False,
                )
            )
        except Exception as exc:  # raised below, once the write stands, as after the write
            failed.append(exc)

    made = memories.create(
        svc,
        actor(ctx),
        args.parent_uri,
        args.title,
        args.content,
        args.priority,
        args.disclosure,
        while_synced,
    )
    uri, node = made.uri, made.node
    if failed:
        raise failed[0]
    # Without an fsync the hint follows the write: it reads the state the write left, the
    # shards not looked at again (what another process wrote meanwhile is no better a
    # duplicate to name).
    related = (
        hinted[0]
        if hinted
        else svc.read(lambda s: similar(s, ctx.namespace, node, title, args.content), refresh=False)
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
        "recall it, manage_triggers for words from existing memories that should point here."
    )
    text += _hold_on(
        parent,
        "If this new memory contradicts it, merge them with update_memory instead of keeping both.",
    )
    data = {"uri": str(uri), "memory_id": node, "version": made.version, "related": related}
    return text, data


# -- delete_memory ---------------------------------------------------------------------------


class DeleteArgs(Args):
    uri: UriText
    recursive: (
        Annotated[
            bool,
            Field(
                description="Also delete every memory below that no other path reaches. "
                "Without it, such a delete is refused."
            ),
        ]
        | None
    ) = None


class DeleteOut(Out):
    uri: str
    memory_id: str
    deleted: int


@uri_tool(
    tools,
    title="Delete Memory",
    description="Remove one URI of a memory. If it was the memory's last URI the memory is "
    "deleted (history kept until compaction). Refused when memories below would become "
    "unreachable, unless recursive=true. Read it first and judge by content.",
    args=DeleteArgs,
    output=DeleteOut,
    annotations=tool_hints(read_only=False, destructive=True, idempotent=True),
    writes=True,
)
def delete_memory(svc: GraphService, args: DeleteArgs, ctx: ToolContext) -> Reply:
    label = args.uri.strip()
    gone = memories.delete(svc, actor(ctx), label, bool(args.recursive))
    deleted, node = gone.deleted, gone.node
    if deleted == 0:
        text = (
            f"Success: Path '{label}' removed. The memory stays reachable through its other "
            "aliases."
        )
    else:
        text = f"Success: Memory '{label}' deleted."
        if deleted > 1:
            text += f" (Recursively deleted {deleted - 1} descendant memory(ies))"
        restore = svc.read(lambda s: memory_view.restore_call(s.graph, ctx.namespace, node))
        text += (
            f" Its versions stay in system://history/{label} (and in "
            f"system://node/{node}) until the deletion is collected; restore it (with its "
            f"priority and disclosure) with {restore}."
        )
    return text, {"uri": label, "memory_id": node, "deleted": deleted}


# -- add_alias / move_memory -----------------------------------------------------------------


class AliasArgs(Args):
    new_uri: Annotated[UriText, Field(description="The additional URI (its parent must exist).")]
    target_uri: Annotated[
        UriText, Field(description="The memory to alias (a URI or system://node/<id>).")
    ]
    priority: Priority | None = None
    disclosure: Disclosure | None = None


class AliasOut(Out):
    uri: str
    memory_id: str


@uri_tool(
    tools,
    title="Add Alias",
    description="Give a memory another URI (not a copy: same memory, its children come along), "
    "with its own priority and disclosure for that context.",
    args=AliasArgs,
    output=AliasOut,
    annotations=tool_hints(read_only=False, destructive=False, idempotent=False),
    writes=True,
)
def add_alias(svc: GraphService, args: AliasArgs, ctx: ToolContext) -> Reply:
    new_uri = parse(args.new_uri)
    node = memories.alias(
        svc, actor(ctx), args.target_uri, args.new_uri, args.priority, args.disclosure
    )
    text = (
        f"Success: Alias '{new_uri}' now points to same memory as "
        f"'{args.target_uri.strip()}' (its children come along).\n"
    )
    text += _hold_on(new_uri.parent(), "Make sure this memory fits there.")
    return text.rstrip("\n"), {"uri": str(new_uri), "memory_id": node}


class MoveArgs(Args):
    uri: Annotated[
        UriText,
        Field(description="The memory to move (a URI, or system://node/<id> to place an orphan)."),
    ]
    new_uri: Annotated[
        UriText, Field(description="Its new URI (the parent must exist; can rename).")
    ]
    priority: Priority | None = None
    disclosure: Disclosure | None = None


class MoveOut(Out):
    uri: str
    old_uri: str
    memory_id: str


@uri_tool(
    tools,
    title="Move Memory",
    description="Move or rename a memory in one atomic step (new URI + removal of the old one); "
    "its children, keywords, history and boot membership follow. Also places an orphan "
    "(uri=system://node/<id>).",
    args=MoveArgs,
    output=MoveOut,
    annotations=tool_hints(read_only=False, destructive=True, idempotent=False),
    writes=True,
)
def move_memory(svc: GraphService, args: MoveArgs, ctx: ToolContext) -> Reply:
    new_uri = parse(args.new_uri)
    node = memories.move(svc, actor(ctx), args.uri, args.new_uri, args.priority, args.disclosure)
    text = (
        f"Success: Memory moved from '{args.uri.strip()}' to '{new_uri}' (children, "
        "keywords, history and boot membership come along)."
    )
    return text, {"uri": str(new_uri), "old_uri": args.uri.strip(), "memory_id": node}


# -- manage_triggers -------------------------------------------------------------------------


class TriggersArgs(Args):
    uri: UriText
    add: (
        Annotated[
            Keywords,
            Field(
                description="Keywords to bind: words that already appear in other memories and "
                "should link here."
            ),
        ]
        | None
    ) = None
    remove: Annotated[Keywords, Field(description="Keywords to unbind.")] | None = None


class TriggersOut(Out):
    uri: str
    memory_id: str
    added: list[str]
    existing: list[str]
    removed: list[str]
    missing: list[str]
    unmentioned: list[str]
    current: list[str]
    written: bool


def unmentioned(svc: GraphService, ns: str, node: str, keywords: list[str]) -> list[str]:
    """The ``keywords`` (bound to ``node``) that no other memory's text links through the
    glossary: among the best search hits for each, none contains it."""
    g = svc.graph

    def accept(n: str) -> bool:
        return n != node and g.is_live(ns, n)

    out = []
    for kw in keywords:
        hits = svc.search.search(ns, kw, KEYWORD_CANDIDATES, accept).hits
        texts = (g.content(ns, h.node) for h in hits)
        if not any(el and kw in svc.glossary.find(ns, live_text(el)) for el in texts):
            out.append(kw)
    return out


@uri_tool(
    tools,
    title="Manage Triggers",
    description="Bind or unbind glossary keywords to a memory. Wherever a bound word appears in "
    "another memory being read, a link here is shown. Use words that already occur in your "
    "memories; see system://glossary.",
    args=TriggersArgs,
    output=TriggersOut,
    annotations=tool_hints(read_only=False, destructive=False, idempotent=True),
    writes=True,
)
def manage_triggers(svc: GraphService, args: TriggersArgs, ctx: ToolContext) -> Reply:
    label, ns = args.uri.strip(), ctx.namespace

    done = memories.triggers(svc, actor(ctx), label, args.add or [], args.remove or [])
    node = done.node
    report = {
        "added": done.added,
        "existing": done.existing,
        "removed": done.removed,
        "missing": done.missing,
    }
    current, lonely = svc.read(
        lambda s: (s.graph.keywords_of(ns, node), unmentioned(s, ns, node, done.added))
    )
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
    if lonely:
        lines.append(
            f"\n[NOTE] No other memory mentions {', '.join(repr(k) for k in lonely)} yet: bound "
            "anyway, but no link shows until a memory's text contains the word. Triggers work "
            "best with words your memories already use."
        )
    data = {"uri": label, "memory_id": node, **report}
    return "\n".join(lines), {
        **data,
        "unmentioned": lonely,
        "current": current,
        "written": done.written,
    }


# -- rollback_memory -------------------------------------------------------------------------


class RollbackArgs(Args):
    uri: UriText
    version: Annotated[
        str,
        Field(
            min_length=1,
            max_length=200,
            description="A version id from memory_history, e.g. 'laptop:42'.",
        ),
    ]
    expected_version: Version | None = None


class RollbackOut(Out):
    uri: str
    memory_id: str
    version: str
    restored: str


@uri_tool(
    tools,
    title="Rollback Memory",
    description="Restore a memory as it was at an earlier version (from memory_history): its "
    "text then, and the priority, placement, keywords and boot membership its later edits "
    "changed. Written as new versions: the history keeps every version.",
    args=RollbackArgs,
    output=RollbackOut,
    annotations=tool_hints(read_only=False, destructive=True, idempotent=False),
    writes=True,
)
def rollback_memory(svc: GraphService, args: RollbackArgs, ctx: ToolContext) -> Reply:
    label = args.uri.strip()
    done = versions.rollback_to(svc, actor(ctx), label, args.version, args.expected_version)
    also = f"; {done.others} other element(s) put back as they were" if done.others else ""
    return (
        f"Success: '{label}' rolled back to version {args.version} (new version {done.version}"
        f"{also}; the history keeps every version).",
        {"uri": label, "memory_id": done.node, "version": done.version, "restored": args.version},
    )


# -- manage_boot -----------------------------------------------------------------------------


class BootArgs(Args):
    add: (
        Annotated[
            list[UriText],
            Field(
                max_length=100,
                description="Memory URIs to load at every session start (system://boot).",
            ),
        ]
        | None
    ) = None
    remove: Annotated[list[UriText], Field(max_length=100)] | None = None


class BootOut(Out):
    boot: list[str]
    written: bool


@uri_tool(
    tools,
    title="Manage Boot Memories",
    description="Add or remove memories loaded by system://boot at every session start (kept by "
    "memory, so moves do not break it). Without arguments, lists them.",
    args=BootArgs,
    output=BootOut,
    annotations=tool_hints(read_only=False, destructive=False, idempotent=True),
    writes=True,
)
def manage_boot(svc: GraphService, args: BootArgs, ctx: ToolContext) -> Reply:
    ns = ctx.namespace

    written = memories.boot(svc, actor(ctx), args.add or [], args.remove or [])

    def listing(s: GraphService) -> list[str]:
        return sorted(memory_view.show_uri(s.graph, ns, n) for n in s.graph.boot_nodes(ns))

    current = svc.read(listing)
    text = "Boot memories (loaded by system://boot, by node, so they survive moves):\n"
    text += "\n".join(f"- {u}" for u in current) if current else "(none)"
    return text, {"boot": current, "written": written}
