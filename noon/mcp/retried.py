"""The answer to a retry of a call written before, whose answer was lost
(:mod:`noon.store.retries`): that nothing was written again, what the first call wrote and when,
and how to write it a second time on purpose; in the tool's own result shape, so a client that
checks results against the tool's ``outputSchema`` accepts it."""

from __future__ import annotations

from typing import Any

import mcp.types as types

from noon.core.elements import CONTENT, EDGE
from noon.core.hlc import utc
from noon.core.ops import Op
from noon.graph.memory_view import show_uri
from noon.graph.reader import op_time_ms, version_id
from noon.mcp.spec import ToolContext, ToolSpec
from noon.store.access import GraphService
from noon.store.retries import WINDOW_MS


def memory_of(batch: list[Op]) -> str | None:
    """The memory a batch wrote: its text's, else the one a placement points at."""
    for op in batch:
        if op.el[0] == CONTENT:
            return op.el[2]
    for op in batch:
        if op.el[0] == EDGE and op.val is not None and isinstance(op.val.get("child"), str):
            return str(op.val["child"])
    return None


def answer(
    svc: GraphService, spec: ToolSpec, args: dict[str, Any], ctx: ToolContext, batch: list[Op]
) -> types.CallToolResult:
    ns = ctx.namespace
    node = memory_of(batch)
    text_op = next((op for op in batch if op.el[0] == CONTENT), None)

    def now(s: GraphService) -> tuple[str | None, str | None]:
        if node is None:
            return None, None
        el = s.graph.content(ns, node)
        current = version_id(el.winner) if el is not None else None
        return show_uri(s.graph, ns, node), current

    shown, current = svc.read(now)
    version = version_id(text_op) if text_op is not None else current
    named = args.get("new_uri") or args.get("uri")
    uri = named.strip() if isinstance(named, str) else shown
    first, last = batch[0], batch[-1]
    at = op_time_ms(first)
    ops = version_id(first) + (f" to {version_id(last)}" if last is not first else "")
    text = (
        f"Success (already written): this same call ({spec.name} with the same arguments, "
        f"from '{ctx.client}') was written by this machine at {utc(at)} ({ops}) and still "
        "stands, so it was not written again; this is its answer, in case the first was lost."
    )
    if node is not None:
        text += f" Memory: {shown} (memory_id {node}, version {version})."
    text += (
        "\nTo write it once more on purpose, change an argument (a title, the text) or call "
        f"again after {utc(at + WINDOW_MS)}."
    )
    values: dict[str, Any] = {
        "uri": uri,
        "memory_id": node,
        "version": version,
        "old_uri": args["uri"].strip() if isinstance(args.get("uri"), str) else None,
        "restored": args.get("version"),
        "related": [],
        "changes": args.get("changes"),
        "change": version_id(last),
        "elements": sum(1 for op in batch if op.el[0] != "review"),
    }
    props = (spec.output_schema or {}).get("properties", {})
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={k: v for k, v in values.items() if k in props and v is not None},
        is_error=False,
    )
