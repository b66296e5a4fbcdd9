"""``noon export --format markdown``: a folder of Markdown files any editor, note-taking app or
static-site tool reads, one memory a file (:mod:`noon.transfer.markdown`), and each namespace's
knowledge graph as the official server's ``memory.jsonl``. ``noon import FOLDER`` reads it back.

Layout::

    FOLDER/noon-markdown.json           what this is (the import recognises the folder by it)
    FOLDER/README.md                    the same, for a person
    FOLDER/<namespace>/<domain>/<path>.md   a memory at its best URI (core://a/b -> core/a/b.md)
    FOLDER/<namespace>/by-id/<id>.md    a memory with no URI (an orphan), or whose URI is no
                                        safe file name here (``..``, a clash on a case-blind disk)
    FOLDER/<namespace>/memory.jsonl     the knowledge graph (only when it holds something)

``by-id`` and ``memory.jsonl`` cannot clash with a domain (domains hold no ``-`` or ``.``). The
folder is written beside its target and renamed into place: a crash leaves no half export.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.elements import boot_key
from noon.graph.reader import GraphReader, Placement, live_text, written_ms
from noon.graph.uri import NODE_VIEW, Uri
from noon.store.access import kg_read, service
from noon.store.private import DIR_MODE
from noon.store.queries import Queries
from noon.store.shard import fsync_dir
from noon.store.store import Store
from noon.transfer import jsontext, official
from noon.transfer.errors import TransferError
from noon.transfer.markdown import MAX_FILE, MarkdownError, MdMemory, MdPlacement, parse, render
from noon.transfer.nocturne import NAMESPACE

MARKER = "noon-markdown.json"
FORMAT = 1
BY_ID = "by-id"
KG_FILE = "memory.jsonl"
MAX_FILES = 2_000_000
"""Files one import reads at most: a folder holding more is refused before anything is read."""
README = """# Memories exported by noon

One memory a file: `<namespace>/<domain>/<path>.md` is the memory at `<domain>://<path>`
(memories without a URI are in `<namespace>/by-id/`). Each file starts with YAML front matter
(uri, aliases, priority, disclosure, every placement, keywords, boot, when each version was
written), then the memory's text exactly. `<namespace>/memory.jsonl` is the knowledge graph in
the format of the official MCP memory server.

`noon import <this folder>` reads it back into noon.
"""


def _memories(graph: GraphReader, ns: str) -> list[MdMemory]:
    out: list[MdMemory] = []
    booted = graph.boot_nodes(ns)
    for node in graph.memory_nodes(ns):
        el = graph.content(ns, node)
        uris = [u for u, _ in graph.uris(ns, node)]
        placed = _primary_first(graph, ns, node, uris)
        if el is None or not (graph.is_live(ns, node) or placed):
            continue  # deleted everywhere: its history stays in the noon format only
        boot = graph.element(boot_key(ns, node))
        listed = boot.winner.val.get("uri") if boot is not None and boot.winner.val else None
        out.append(
            MdMemory(
                namespace=ns,
                node=node,
                text=live_text(el),
                uri=str(uris[0]) if uris else NODE_VIEW + node,
                aliases=[str(u) for u in uris[1:]],
                placements=[
                    MdPlacement(p.parent, p.key_name, p.priority, p.disclosure) for p in placed
                ],
                keywords=graph.keywords_of(ns, node),
                boot=None if node not in booted else (listed or ""),
                history=[written_ms(v) for v in el.versions if v.val is not None],
            )
        )
    return out


def _primary_first(graph: GraphReader, ns: str, node: str, uris: list[Uri]) -> list[Placement]:
    """The node's placements, the one its best URI ends in first (its priority and disclosure
    are the ones ``read_memory`` shows)."""
    placed = graph.placements(ns, node)
    found = graph.resolve(ns, uris[0]) if uris else None
    first = found[1] if found is not None and found[0] == node else None
    return sorted(placed, key=lambda p: p != first)


@dataclass
class Exported:
    memories: int = 0
    entities: int = 0
    relations: int = 0
    namespaces: list[str] = field(default_factory=list)


def _file_for(root: Path, memory: MdMemory) -> Path:
    """Where a memory goes: its URI as a path when every segment is a safe file name."""
    ns_dir = root / memory.namespace
    domain, sep, rest = memory.uri.partition("://")
    segments = rest.split("/") if rest else []
    safe = (
        sep
        and domain != "system"
        and segments
        and all(
            s not in (".", "..") and "\\" not in s and "\0" not in s and len(s.encode()) <= 200
            for s in segments
        )
    )
    if safe:
        return ns_dir.joinpath(domain, *segments[:-1], segments[-1] + ".md")
    return ns_dir / BY_ID / f"{memory.node}.md"


def _write_new(path: Path, text: str) -> bool:
    """Create ``path`` with ``text``; False when that name is taken or cannot be a file here."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(text)
    except (FileExistsError, NotADirectoryError, IsADirectoryError):
        return False
    return True


def export_dir(store: Store, target: Path) -> Exported:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise TransferError(f"{target}: exists and is not an empty folder; name a new one")
    svc = service(store)
    found: dict[str, list[MdMemory]] = {}

    def collect(s: object) -> list[str]:
        spaces = sorted(Queries(svc.graph).namespaces())
        for ns in spaces:
            found[ns] = _memories(svc.graph, ns)
        return spaces

    spaces = svc.read(collect)
    done = Exported(namespaces=spaces)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=DIR_MODE, parents=True)  # only its owner can enter the export
    try:
        for ns in spaces:
            if not NAMESPACE.match(ns):
                raise TransferError(f"namespace {ns!r} cannot be a folder name")
            for memory in found[ns]:
                text = render(memory)
                if not _write_new(_file_for(tmp, memory), text):
                    by_id = tmp / ns / BY_ID / f"{memory.node}.md"
                    if not _write_new(by_id, text):
                        raise TransferError(f"{by_id}: cannot be written")
                done.memories += 1
            graph = kg_read(store, ns, lambda view: view.graph())
            if graph["entities"] or graph["relations"]:
                (tmp / ns).mkdir(exist_ok=True)
                (tmp / ns / KG_FILE).write_text(
                    official.render(graph), encoding="utf-8", errors="surrogatepass"
                )
                done.entities += len(graph["entities"])
                done.relations += len(graph["relations"])
        (tmp / "README.md").write_text(README, encoding="utf-8")
        marker = {"noon_markdown": FORMAT, "exported_by": store.node, "memories": done.memories}
        (tmp / MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")
        if target.exists():
            target.rmdir()
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return done


def is_markdown_export(path: Path) -> bool:
    return path.is_dir() and (path / MARKER).is_file()


@dataclass
class MarkdownExport:
    memories: list[MdMemory] = field(default_factory=list)
    graphs: dict[str, official.OfficialGraph] = field(default_factory=dict)
    """namespace -> its knowledge graph"""


def read_dir(root: Path) -> MarkdownExport:
    """Every memory and knowledge graph of an exported folder; symbolic links are not followed.
    Everything is read and checked before anything is imported."""
    try:
        marker = jsontext.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        marker = None
    if not isinstance(marker, dict) or marker.get("noon_markdown") != FORMAT:
        raise TransferError(f"{root / MARKER}: not a noon Markdown export (format {FORMAT})")
    out = MarkdownExport()
    problems: list[str] = []
    seen: dict[tuple[str, str], Path] = {}
    files = 0
    for here, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            files += 1
            if files > MAX_FILES:
                raise TransferError(f"{root}: more than {MAX_FILES} files; not an export of noon")
            path = Path(here) / name
            rel = path.relative_to(root)
            if path.is_symlink() or not path.is_file() or len(rel.parts) < 2:
                continue
            if name == KG_FILE and len(rel.parts) == 2:
                _read_kg(path, rel.parts[0], out, problems)
            elif name.endswith(".md"):
                _read_memory(path, rel, out, problems, seen)
    if problems:
        raise TransferError.listing(str(root), problems)
    return out


def _read_text(path: Path) -> str:
    if path.stat().st_size > MAX_FILE:
        raise MarkdownError(f"larger than {MAX_FILE >> 20} MiB")
    try:
        return path.read_bytes().decode("utf-8", errors="surrogatepass")  # newlines as written
    except UnicodeDecodeError as exc:
        raise MarkdownError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _read_memory(
    path: Path,
    rel: Path,
    out: MarkdownExport,
    problems: list[str],
    seen: dict[tuple[str, str], Path],
) -> None:
    try:
        memory = parse(_read_text(path))
    except MarkdownError as exc:
        problems.append(f"{rel}: {exc}")
        return
    except OSError as exc:
        problems.append(f"{rel}: cannot read: {exc.strerror}")
        return
    if memory.namespace != rel.parts[0]:
        problems.append(f"{rel}: its namespace {memory.namespace!r} is not its folder's")
        return
    twin = seen.setdefault((memory.namespace, memory.node), rel)
    if twin != rel:
        problems.append(f"{rel}: memory {memory.node} is in {twin} too")
        return
    out.memories.append(memory)


def _read_kg(path: Path, ns: str, out: MarkdownExport, problems: list[str]) -> None:
    if not NAMESPACE.match(ns):
        problems.append(f"{ns}/{KG_FILE}: {ns!r} is not a namespace")
        return
    try:
        out.graphs[ns] = official.parse(_read_text(path), str(path))
    except TransferError as exc:
        problems.append(f"{ns}/{KG_FILE}: {exc}")
    except OSError as exc:
        problems.append(f"{ns}/{KG_FILE}: cannot read: {exc.strerror}")
