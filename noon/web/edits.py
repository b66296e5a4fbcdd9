"""What each edit of the page writes, through the planning code of the MCP tools
(:mod:`noon.graph.plan`), with the page's own refusals. Pure planners over one snapshot of the
read model: :meth:`noon.store.store.Store.write` may run them twice (once before taking the
shard's lock, again under it when something was folded meanwhile), and a refusal raised by
either run writes nothing (used only by :mod:`noon.web.data`)."""

from __future__ import annotations

from noon.core.ops import Draft
from noon.graph import plan
from noon.graph.reader import Placement, live_text
from noon.graph.uri import Uri
from noon.store.readmodel.graph import SqlGraph
from noon.web.errors import Stale, WebError
from noon.web.views import placement_version


def text(g: SqlGraph, ns: str, node: str, new: str) -> list[Draft]:
    el = g.content(ns, node)
    if el is not None and live_text(el) == new and not (el.conflicted or el.deleted):
        raise WebError("Nothing changed: the text is the same as the current version.")
    return [plan.set_text(ns, node, new)]


def placement(
    g: SqlGraph,
    ns: str,
    node: str,
    pl: Placement | None,
    priority: int | None,
    disclosure: str | None,
    expected_placement: str | None,
) -> list[Draft]:
    if pl is None:
        raise WebError("Priority and disclosure belong to a URI: open the memory by URI.")
    seen = placement_version(g, ns, pl)
    if expected_placement is not None and seen != expected_placement:
        raise Stale(
            "This URI's priority or disclosure changed since the page loaded it.",
            {"placement": seen},
        )
    prio = plan.check_priority(priority if priority is not None else pl.priority)
    disc = plan.check_disclosure(disclosure) if disclosure is not None else pl.disclosure
    if (prio, disc) == (pl.priority, pl.disclosure):
        raise WebError("Nothing changed: same priority and disclosure.")
    return [plan.place(g, ns, pl.parent, pl.key_name, node, prio, disc)]


def alias(
    g: SqlGraph,
    ns: str,
    node: str,
    pl: Placement | None,
    at: Uri,
    priority: int | None,
    disclosure: str | None,
) -> list[Draft]:
    """Another URI; priority and disclosure default to those of the placement ``pl``."""
    prio = priority if priority is not None else (pl.priority if pl else 0)
    disc = disclosure if disclosure is not None else (pl.disclosure if pl else "")
    return [plan.alias(g, ns, at, node, prio, disc)]


def move(g: SqlGraph, ns: str, node: str, pl: Placement | None, at: Uri) -> list[Draft]:
    if pl is None:
        raise WebError("Place an orphan from the Orphans page (it needs a disclosure).")
    return plan.move(g, ns, node, pl, at, None, None)


def keywords(g: SqlGraph, ns: str, node: str, add: list[str], remove: list[str]) -> list[Draft]:
    drafts, _ = plan.triggers(g, ns, node, add, remove)
    if not drafts:
        raise WebError("Nothing changed: those keywords were already so.")
    return drafts


def boot(g: SqlGraph, ns: str, add: list[str], remove: list[str]) -> list[Draft]:
    """``add`` and ``remove`` are URIs."""
    adds = [plan.locate(g, ns, u)[0] for u in add]
    removes = [plan.locate(g, ns, u)[0] for u in remove]
    drafts = plan.boot(g, ns, adds, removes)
    if not drafts:
        raise WebError("Nothing changed: the boot list already reads so.")
    return drafts
