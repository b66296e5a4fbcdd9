"""Chinese and Japanese by their words (lexical search, no model): a memory is found by a query in
its own language, and a query mixing scripts as people write them ("用Python写", "noonの設定")
keeps its Latin words whole, as the index holds them."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from noon.graph.search import cjk, tokens
from noon.store.access import GraphService
from noon.store.readmodel.documents import segment
from noon.store.store import Store
from tests.harness.texts import ranked, write_texts

MEMORIES = {
    "script": "我用Python写同步脚本。",
    "python": "I write the sync scripts in Python.",
    "jogging": "毎朝、公園でジョギングをしています。",
    "units": "noonの設定はsystemdで管理している。",
    "tea": "早上喝绿茶。",
}


def test_chinese_and_japanese_memories_are_found_by_their_own_words(
    lexical: tuple[Store, GraphService],
) -> None:
    _, svc = lexical
    write_texts(svc, "default", MEMORIES)
    assert ranked(svc, "绿茶") == ["core://tea"]
    assert ranked(svc, "同步脚本") == ["core://script"]
    assert ranked(svc, "ジョギング") == ["core://jogging"]
    assert ranked(svc, "公園で走る") == ["core://jogging"]
    # mixed scripts: the Latin word is a word of its own, not bigrams of letters
    assert ranked(svc, "用Python写")[0] == "core://script"
    assert set(ranked(svc, "Python代码")) == {"core://script", "core://python"}
    assert ranked(svc, "systemdの設定") == ["core://units"]


_WORD = re.compile(r"\w+")


@given(st.text(alphabet="aB1_ -記憶のカ한﨑", max_size=30))
def test_a_query_cuts_words_outside_cjk_as_the_index_does(text: str) -> None:
    """The index makes each CJK character a word (:func:`segment`) and keeps every other run
    of letters whole; a query's tokens hold the same runs whole, and its CJK tokens are one or
    two CJK characters (searched as phrases of them)."""
    in_script = cjk()
    indexed = [w for w in _WORD.findall(segment(text).casefold()) if not in_script.search(w)]
    asked = tokens(text)
    assert [w for w in asked if not in_script.search(w)] == indexed
    assert all(
        1 <= len(w) <= 2 and all(in_script.match(c) for c in w)
        for w in asked
        if in_script.search(w)
    )
