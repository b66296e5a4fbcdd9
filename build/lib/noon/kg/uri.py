"""Knowledge-graph entities as URI-readable nodes, for the URI-graph tools.

Domain ``kg``: ``kg://<name>`` is the entity named ``<name>``; everything after ``kg://`` is the
name verbatim (names may contain ``/``, spaces or any character, so the URI tools must not split
or normalise it). ``kg://`` alone lists the entities. Rendering is read-only: the knowledge graph
is edited through its nine tools.
"""

from __future__ import annotations

from noon.core.fold import Fold
from noon.kg.graph import Index, View

SCHEME = "kg://"


def entity_name(uri: str) -> str | None:
    """The entity name a ``kg://`` URI stands for (``""`` for the domain root), or None."""
    return uri[len(SCHEME) :] if uri.startswith(SCHEME) else None


def render_entity(fold: Fold, namespace: str, name: str, index: Index | None = None) -> str | None:
    """The entity as text (type, observations in order, relations either way), or None when no
    such entity is live. Pass the store's index (``noon.kg.live.index_for``) to avoid a scan."""
    view = View(fold, index or Index.build(fold), namespace)
    if view.entity(name) is None:
        return None
    ent = view.entity_dict(name)
    lines = [f"{SCHEME}{name}", f"type: {ent['entityType']}", "", "observations:"]
    lines += [f"- {o}" for o in ent["observations"]] or ["(none)"]
    lines += ["", "relations:"]
    rels = view.relations_touching([name])
    lines += [f"- {k[2]} --{k[4]}--> {k[3]}" for k, _ in rels] or ["(none)"]
    return "\n".join(lines)


def render_index(fold: Fold, namespace: str, index: Index | None = None) -> str:
    """``kg://``: every live entity, one per line, in creation order."""
    view = View(fold, index or Index.build(fold), namespace)
    names = view.entity_names()
    if not names:
        return "(no entities)"
    lines = []
    for name in names:
        ent = view.entity(name)
        assert ent is not None and ent.winner.val is not None
        lines.append(f"{SCHEME}{name} ({ent.winner.val['type']})")
    return "\n".join(lines)
