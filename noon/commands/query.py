"""``noon query TEXT``: search the URI memories (ranked full-text search, the one behind the
``search_memory`` tool) and the knowledge graph (the official server's ``search_nodes``
semantics: case-insensitive substring of a name, type or observation)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from noon.app import search as app_search
from noon.app.search import Hit
from noon.commands.opening import open_store
from noon.commands.terminal import visible
from noon.config import add_store_flags, settings_from
from noon.errors import Invalid
from noon.store.access import GraphService, service
from noon.store.store import Store


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Search memories by words (ranked over content, URIs, disclosures and keywords; "
        "a word no memory holds as the start of one) and knowledge-graph entities by substring."
    )
    parser.add_argument("text", nargs="+", help="what to look for")
    parser.add_argument("-n", "--limit", type=int, default=10, help="memories shown (default 10)")
    add_store_flags(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")


def search(store: Store, namespace: str, text: str, limit: int) -> dict[str, Any]:
    """:func:`noon.app.search.search` (what ``search_memory`` ranks and shows) and the knowledge
    graph's substring search, on one snapshot."""

    def fn(svc: GraphService) -> tuple[list[Hit], dict[str, Any]]:
        hits = app_search.search(svc, namespace, text, None, limit).hits
        return hits, store.kg(namespace).search(text)

    hits, kg = service(store).read(fn)
    memories = [
        {
            "uri": str(h.uri),
            "node_id": h.node,
            "score": h.score,
            "version": h.version,
            "snippet": h.snippet,
        }
        for h in hits
    ]
    return {
        "query": text,
        "memories": memories,
        "entities": kg["entities"],
        "relations": kg["relations"],
    }


def render(result: dict[str, Any]) -> str:
    """The result as lines; every stored field is shown :func:`visible` (no control character
    reaches the terminal, no field spans two lines)."""
    v = visible
    out = [f"memories matching {result['query']!r}: {len(result['memories'])}"]
    for m in result["memories"]:
        out.append(f"  {v(m['uri'])}  (score {m['score']})")
        out.append(f"    {v(m['snippet'])}")
    out.append(f"knowledge-graph entities: {len(result['entities'])}")
    for e in result["entities"]:
        out.append(f"  kg://{v(e['name'])} ({v(e['entityType'])})")
        for o in e["observations"][:5]:
            out.append(f"    - {v(o)}")
        if len(e["observations"]) > 5:
            out.append(f"    ... {len(e['observations']) - 5} more")
    for r in result["relations"]:
        out.append(f"  {v(r['from'])} --{v(r['relationType'])}--> {v(r['to'])}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    text = " ".join(args.text).strip()
    if not text:
        raise Invalid("nothing to search for")
    with open_store(settings) as store:
        result = search(store, settings.namespace, text, max(1, args.limit))
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0
