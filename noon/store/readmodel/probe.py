"""Which of a new memory's words a stored document holds, as a word or the start of one (CJK:
as a run of characters): the test behind the duplicate hint (:meth:`.search.Search.related`),
made on each candidate's text."""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import cached_property

from noon.graph.search import cjk, tokens


def distinct_words(doc: str) -> list[str]:
    """A document's distinct words, sorted: :func:`holds` finds a prefix by bisection."""
    return sorted(set(tokens(doc)))


def holds(words: list[str], flat: str, term: str) -> bool:
    """True when the document (its sorted words, its casefolded text) holds ``term`` as a word
    or the start of one (CJK: as a run of characters)."""
    if cjk().search(term):
        return term in flat or term in flat.replace(" ", "")
    i = bisect_left(words, term)
    return i < len(words) and words[i].startswith(term)


class WordProbe:
    """Which of ``words`` (a new memory's, as :func:`~noon.graph.search.tokens` cut them) a
    document holds, each as :func:`holds` decides: one pass of one compiled pattern over the
    document's casefolded text instead of cutting it into words. A word starts a word of the
    document exactly where it matches after a character that is not a word character (words
    are runs of them); the pattern tries the longest words first, so where several start the
    same word the one matched holds the others as prefixes. A document with CJK text (which
    :func:`~noon.graph.search.tokens` cuts into bigrams) is cut into words instead."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        in_script = cjk().search
        self.plain = [w for w in words if not in_script(w)]
        """In the order given; a CJK word is held only by a document with CJK text."""
        self.wanted = set(self.plain)
        self.longest_first = sorted(self.plain, key=len, reverse=True)
        """The substring test's order: a longer word is rarer, so a candidate lacking enough of
        them is ruled out after fewer tests (the verdict does not depend on the order)."""

    @cached_property
    def starts(self) -> re.Pattern[str]:
        """Compiled on the first document the substring test lets through (most of the
        duplicate hint's candidates are ruled out before)."""
        longest = sorted(self.wanted, key=len, reverse=True)
        return re.compile(rf"(?<!\w)(?:{'|'.join(re.escape(w) for w in longest)})")

    def held(self, doc: str, at_least: int = 0) -> tuple[str, ...]:
        """The words ``doc`` holds, in the order given; ``()`` as soon as it is plain that it
        holds fewer than ``at_least`` of them: a word held is in the casefolded text, and a
        test of that rules out most candidates of the duplicate hint without the pattern."""
        flat = doc.casefold()
        if not flat.isascii() and cjk().search(flat):  # isascii is a flag: no scan
            words = distinct_words(doc)
            return tuple(w for w in self.words if holds(words, flat, w))
        if not self.plain:
            return ()
        spare = len(self.plain) - at_least
        for word in self.longest_first:
            if word not in flat:
                spare -= 1
                if spare < 0:
                    return ()
        held = {
            found[:end]
            for found in set(self.starts.findall(flat))
            for end in range(1, len(found) + 1)
            if found[:end] in self.wanted
        }
        return tuple(w for w in self.plain if w in held)
