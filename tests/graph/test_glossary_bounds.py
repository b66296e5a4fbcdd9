"""Glossary linking is bounded in work and in what it shows: matches never overlap (linear in
the text whatever the keywords), the page marks at most MAX_SPANS places and says so, a read
lists at most MAX_LINKS linked memories and says so, and honest readers are served meanwhile.
Before: keyword ``-`` over 1,000,000 dashes made the page answer 73 MB in 21-24 s, and keywords
``-`` to ``-`` x 100 over 200,000 dashes made one read_memory take 44.5 s."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from noon.graph import plan
from noon.graph.glossary import MAX_LINKS, MAX_SPANS, Glossary, _wordish
from noon.graph.reader import GraphReader
from noon.graph.uri import parse
from noon.store.access import service
from tests.harness.graphsim import Replica
from tests.harness.uri import Session, make_server, open_store
from tests.harness.web import NS, agent_create, page_server

BOUND = 30.0
"""Generous for a loaded machine: each of these took 21 s or more before."""


def bind(store: Any, uri: str, keywords: list[str]) -> None:
    def fn(g: GraphReader) -> tuple[list[Any], None]:
        node = plan.locate(g, NS, uri)[0]
        return plan.triggers(g, NS, node, keywords, [])[0], None

    service(store).write(fn, "test")


async def test_many_nested_keywords_over_a_long_text_read_in_bounded_time(tmp_path: Path) -> None:
    store, settings = open_store(tmp_path, "laptop")
    async with Client(make_server(store, settings)) as client:
        s = Session(client)
        await s.create("core://", "dash", "what a dash is")
        await s.create("core://", "long", "-" * 200_000)
        await s.create("core://", "honest", "an honest memory")
        await s.call("manage_triggers", uri="core://dash", add=["-" * k for k in range(1, 101)])
        answers: dict[str, Any] = {}

        async def hostile() -> None:
            started = time.monotonic()
            answers["long"] = await s.read("core://long")
            answers["took"] = time.monotonic() - started

        async def honest() -> None:
            answers["honest"] = await s.read("core://honest")

        async with anyio.create_task_group() as tg:
            tg.start_soon(hostile)
            tg.start_soon(honest)
        assert answers["took"] < BOUND
        assert "an honest memory" in answers["honest"]
        body = answers["long"]
        assert "-" * 200_000 in body
        links = [line for line in body.splitlines() if line.endswith("-> core://dash")]
        # Leftmost-longest: the 100-dash keyword covers the text, the shorter ones never match.
        assert links == ["- @" + "-" * 100 + " -> core://dash"]


async def test_a_read_lists_at_most_max_links_memories_and_says_so(tmp_path: Path) -> None:
    store, settings = open_store(tmp_path, "laptop")
    async with Client(make_server(store, settings)) as client:
        s = Session(client)
        count = MAX_LINKS + 7
        for i in range(count):
            await s.create("core://", f"t{i}", f"term {i}")
            await s.call("manage_triggers", uri=f"core://t{i}", add=[f"word{i}"])
        await s.create("core://", "all", " ".join(f"word{i}" for i in range(count)))
        body = await s.read("core://all")
        links = [line for line in body.splitlines() if " -> core://t" in line]
        assert len(links) == MAX_LINKS
        assert (
            f"- ... and 7 more linked memories (only the first {MAX_LINKS} are listed; "
            "system://glossary lists every keyword)" in body
        )


async def test_the_page_marks_at_most_max_spans_places_and_says_so(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        agent_create(page.store, "core://", "dash", "what a dash is")
        agent_create(page.store, "core://", "long", "-" * 1_000_000)
        bind(page.store, "core://dash", ["-"])
        answers: dict[str, Any] = {}

        async def hostile() -> None:
            started = time.monotonic()
            r = await page.client.get(
                "/api/memory", params={"uri": "core://long"}, headers=page.auth
            )
            answers["size"] = len(await r.read())
            answers["took"] = time.monotonic() - started
            answers["status"] = r.status

        async def honest() -> None:
            answers["info"] = (await page.get("/api/info"))[0]

        async with anyio.create_task_group() as tg:
            tg.start_soon(hostile)
            tg.start_soon(honest)
        assert answers["status"] == 200 and answers["info"] == 200
        assert answers["took"] < BOUND
        assert answers["size"] < 1_000_000 + 200_000  # the text and MAX_SPANS links (was 73 MB)
        _, m = await page.get("/api/memory", uri="core://long")
        assert len(m["glossary"]) == MAX_SPANS and m["glossary_more"] is True
        assert m["glossary"][0] == {
            "start": 0,
            "end": 1,
            "keyword": "-",
            "targets": ["core://dash"],
        }
        _, short = await page.get("/api/memory", uri="core://dash")
        assert short["glossary_more"] is False


WORDS = st.sampled_from(["-", "--", "ab", "abc", "b", "Sal", "Salem", "é", "中", "a b"])


@given(st.lists(WORDS, min_size=1, max_size=6, unique=True), st.lists(WORDS, max_size=40))
def test_matches_never_overlap_and_sit_on_word_boundaries(
    keywords: list[str], pieces: list[str]
) -> None:
    w = Replica("a")
    w.write(lambda g: plan.create(g, NS, parse("core://"), "k", "k", 1, "d")[0:2])
    node = plan.locate(w.graph, NS, "core://k")[0]
    w.write(lambda g: (plan.triggers(g, NS, node, keywords, [])[0], None))
    text = " ".join(pieces) + "x" * len(pieces)
    glossary = Glossary(w.graph)
    folded = text.lower()
    last = 0
    for start, end, kws in glossary.matches(NS, text):
        assert start >= last and end > start
        last = end
        assert all(folded[start:end] == kw.lower() for kw in kws)
        word = folded[start:end]
        assert not (_wordish(word[0]) and start > 0 and _wordish(folded[start - 1]))
        assert not (_wordish(word[-1]) and end < len(folded) and _wordish(folded[end]))
    found = glossary.find(NS, text)
    assert set(found) <= set(keywords)
