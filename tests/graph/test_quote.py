"""Tests for quote-based editing (noon.graph.quote)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from noon.graph.quote import (
    Budget,
    QuoteEdit,
    QuoteError,
    append_text,
    follow_line_breaks,
    normalise,
    normalise_mapped,
    replace_quoted,
)
from noon.graph.quote_hint import not_found_message

# (text, old, new, expected text) — every case needs normalisation (no verbatim occurrence).
NORMALISED_CASES: list[tuple[str, str, str, str]] = [
    # double quote variants in the text, straight in the quote
    *[
        (f"He said {q}hi{q} today.", 'said "hi"', "said 'yo'", "He said 'yo' today.")
        for q in "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb\uff02"
    ],
    # single quote variants in the text, straight in the quote
    *[
        (f"it{q}s fine", "it's", "it is", "it is fine")
        for q in "\u2018\u2019\u201a\u201b\u2032\u2039\u203a\u00b4\u02bc\uff07"
    ],
    # and the other way round: curly in the quote, straight in the text
    ('say "hi" now', "say \u201chi\u201d", "wave", "wave now"),
    ("don't stop", "don\u2019t", "do not", "do not stop"),
    # dash variants
    *[
        (f"2020{d}2024 range", "2020-2024", "2020 to 2024", "2020 to 2024 range")
        for d in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
    ],
    ("a - b", "a \u2014 b", "c", "c"),
    # Unicode spaces
    *[
        (f"x new{s}york y", "new york", "NYC", "x NYC y")
        for s in "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
        "\u200a\u202f\u205f\u3000"
    ],
    ("a\u00a0b", "a b", "c", "c"),
    # runs of spaces and tabs collapse; the whole run is inside the span
    ("one    two three", "one two", "1 2", "1 2 three"),
    ("one \t two three", "one two", "1 2", "1 2 three"),
    ("one two three", "one   two", "1 2", "1 2 three"),
    ("k:\tv;", "k: v", "k=v", "k=v;"),
    # trailing whitespace at line ends is ignored and left in place outside the span
    ("first  \nsecond\n", "first\nsecond", "X", "X\n"),
    ("first\nsecond\n", "first \t\nsecond", "X", "X\n"),
    ("ke\u00a0ep  \nend", "ke ep", "KEEP", "KEEP  \nend"),
    # CRLF and CR line endings; a CRLF pair is never split
    ("a\r\nb\r\nc", "a\nb", "x", "x\r\nc"),
    ("a\r\nb\r\nc", "b\n", "x", "a\r\nxc"),
    ("a\rb\rc", "b\nc", "Y", "a\rY"),
    ("a\nb\nc", "a\r\nb", "x", "x\nc"),
    # combining characters (NFC): decomposed in text, composed in quote, and vice versa
    ("un cafe\u0301 noir", "caf\u00e9", "the", "un the noir"),
    ("un caf\u00e9 noir", "cafe\u0301", "the", "un the noir"),
    ("A\u030angstr\u00f6m", "\u00c5ngstro\u0308m", "A", "A"),
    # ellipsis both ways
    ("wait\u2026 what", "wait... what", "hm", "hm"),
    ("wait... what", "wait\u2026 what", "hm", "hm"),
    ("so\u2026", "so...", "so.", "so."),
    # invisible characters in the text
    ("zero\u200bwidth", "zerowidth", "ok", "ok"),
    ("\ufeffBOM\u00a0start", "BOM start", "x", "\ufeffx"),
    # indentation amount differs (spaces vs tab vs more spaces)
    (
        "def f():\n    return 1\n",
        "def f():\n  return 1",
        "def f():\n    return 2",
        "def f():\n    return 2\n",
    ),
    ("def f():\n\treturn 1\n", "def f():\n    return 1", "g", "g\n"),
    ("x\n    foo bar\nz", "  foo  bar", "  baz", "x\n  baz\nz"),
    # indentation present in the text, absent from the quote (and vice versa)
    ("- a\n    - b\nz", "- a\n- b", "- a\n  - c", "- a\n  - c\nz"),
    ("top\nleft\nend", "top\n   left", "top\n  right", "top\n  right\nend"),
    # an indented quote must match a whole line; the line's indentation is replaced too
    ("head\nitem one\n", "    item one", "  item two", "head\n  item two\n"),
    # several kinds at once
    (
        "\u201cSmart\u201d\u00a0\u2014 quotes\u2026  \r\nnext",
        '"Smart" - quotes...\nnext',
        "plain",
        "plain",
    ),
]


@pytest.mark.parametrize(("text", "old", "new", "expected"), NORMALISED_CASES)
def test_normalised_table(text: str, old: str, new: str, expected: str) -> None:
    assert old not in text  # the table is about the fallback
    edit = replace_quoted(text, old, new)
    assert edit.text == expected
    assert edit.normalised
    ((start, end),) = edit.spans
    assert text[:start] + new + text[end:] == expected


@pytest.mark.parametrize(
    ("text", "old"),
    [
        ("wait\u2026", "wait.."),  # would cut the ellipsis in two
        ("a\n  b", "  b\n"),  # nothing after b
        ("ab", "a b"),  # blanks are collapsed, never invented
        ("a\n\nb", "a\nb"),  # blank lines are not normalised
        ("Case", "case"),  # case is not normalised
        ("xfoo", "  foo"),  # an indented quote matches only at a line start
    ],
)
def test_normalisation_does_not_overreach(text: str, old: str) -> None:
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, old, "z")
    assert info.value.kind == "not_found"


def test_normalise_form() -> None:
    assert normalise("  a  \u00a0b\u2026 \r\n\tc\u0301") == " a b...\n \u0107"
    assert normalise("  a\n\tb", ignore_indent=True) == "a\nb"


def test_exact_match() -> None:
    edit = replace_quoted("alpha beta gamma", "beta", "BETA")
    assert edit == QuoteEdit(
        text="alpha BETA gamma", spans=((6, 10),), normalised=False, inserted="BETA"
    )


def test_exact_match_takes_precedence_over_normalised() -> None:
    text = "it\u2019s here; it's there; it\u2019s everywhere"
    edit = replace_quoted(text, "it's", "it is")
    assert not edit.normalised
    assert edit.text == "it\u2019s here; it is there; it\u2019s everywhere"


def test_exact_ambiguity_is_not_rescued_by_normalisation() -> None:
    with pytest.raises(QuoteError) as info:
        replace_quoted("a-b\na-b\na\u2013b", "a-b", "x")
    assert info.value.kind == "ambiguous"
    assert "2 places" in str(info.value)


def test_ambiguity_refused_with_line_numbers() -> None:
    text = "todo: x\nnothing\ntodo: x\nmore\n todo: x"
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, "todo: x", "done")
    err = info.value
    assert err.kind == "ambiguous"
    assert err.lines == (1, 3, 5)
    msg = str(err)
    assert "3 places" in msg and "lines 1, 3, 5" in msg
    assert "context" in msg and "replace_all" in msg


def test_normalised_ambiguity_refused() -> None:
    text = "say \u201chi\u201d\nsay \u00abhi\u00bb"
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, 'say "hi"', "x")
    assert info.value.lines == (1, 2)
    assert "after normalisation" in str(info.value)


def test_overlapping_matches_are_ambiguous() -> None:
    with pytest.raises(QuoteError):
        replace_quoted("aaa", "aa", "b")
    assert replace_quoted("aaa", "aa", "b", replace_all=True).text == "ba"


def test_replace_all_exact() -> None:
    edit = replace_quoted("x=1; x=1; y", "x=1", "x=2", replace_all=True)
    assert edit.text == "x=2; x=2; y"
    assert edit.spans == ((0, 3), (5, 8))
    assert not edit.normalised


def test_replace_all_normalised() -> None:
    text = "\u201ca\u201d then \u00aba\u00bb then 'a'"
    edit = replace_quoted(text, '"a"', "A", replace_all=True)
    assert edit.normalised
    assert edit.text == "A then A then 'a'"


def test_replace_all_single_match() -> None:
    assert replace_quoted("one two", "two", "2", replace_all=True).text == "one 2"


def test_empty_old_refused() -> None:
    with pytest.raises(QuoteError) as info:
        replace_quoted("text", "", "x")
    assert info.value.kind == "empty"


def test_whitespace_only_old_not_found() -> None:
    with pytest.raises(QuoteError) as info:
        replace_quoted("a b", "\t", "x")
    assert info.value.kind == "not_found"
    assert "only whitespace" in str(info.value)


def test_not_found_shows_closest_candidate() -> None:
    text = "# Notes\nThe deploy runs on Fridays.\nBackups run nightly.\n"
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, "The deploy runs on Thursdays.", "x")
    err = info.value
    assert err.kind == "not_found"
    assert err.lines[0] == 2
    assert "line 2" in str(err)
    assert "The deploy runs on Fridays." in str(err)


def test_not_found_multiline_candidate() -> None:
    text = "intro\nalpha one\nbeta two\noutro"
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, "alpha one\nbeta too", "x")
    msg = str(info.value)
    assert "lines 2-3" in msg
    assert "    alpha one\n    beta two" in msg


def test_not_found_in_empty_text() -> None:
    with pytest.raises(QuoteError) as info:
        replace_quoted("", "x", "y")
    assert info.value.kind == "not_found"


def test_new_is_inserted_verbatim() -> None:
    edit = replace_quoted("a\u00a0b c", "a b", "\u201cq\u201d\u00a0 ")
    assert edit.text == "\u201cq\u201d\u00a0  c"


@pytest.mark.parametrize(
    ("text", "addition", "expected"),
    [
        ("", "x", "x"),
        ("a", "", "a"),
        ("a", "b", "a\nb"),
        ("a\n", "b", "a\nb"),
        ("a", "\nb", "a\nb"),
        ("a\n\n", "b", "a\n\nb"),
        ("a\r\nb", "c", "a\r\nb\r\nc"),
        ("a\r\nb\nc", "d", "a\r\nb\nc\nd"),
    ],
)
def test_append_text(text: str, addition: str, expected: str) -> None:
    assert append_text(text, addition) == expected


# --- properties -------------------------------------------------------------------------------

# Characters with look-alikes, so drifted quotes exercise every normalisation.
ALPHABET = "ab \t\n\r\u201c\u201d\u2019'\"-\u2013\u2014\u2026.\u00a0\u3000e\u0301\u00e9\u200b"
DRIFT = {
    "\u201c": ['"'],
    "\u201d": ['"'],
    "\u2019": ["'"],
    "'": ["\u2018"],
    '"': ["\u201e"],
    "-": ["\u2212"],
    "\u2013": ["-"],
    "\u2014": ["-", "\u2015"],
    "\u2026": ["..."],
    ".": ["."],
    " ": ["  ", "\u00a0", "\t"],
    "\u00a0": [" "],
    "\u3000": [" "],
    "\t": [" "],
    "\u00e9": ["e\u0301"],
    "\u200b": [""],
    "\r": ["\n", "\r"],
}


@st.composite
def text_and_quote(draw: st.DrawFn) -> tuple[str, str]:
    text = draw(st.text(ALPHABET, min_size=1, max_size=40))
    i = draw(st.integers(0, len(text) - 1))
    j = draw(st.integers(i + 1, len(text)))
    drifted = "".join(draw(st.sampled_from([ch, *DRIFT.get(ch, [])])) for ch in text[i:j])
    return text, drifted


@given(text_and_quote(), st.text("xyz\n ", max_size=5))
def test_edit_never_touches_text_outside_spans(pair: tuple[str, str], new: str) -> None:
    text, old = pair
    assume(old)
    try:
        edit = replace_quoted(text, old, new, replace_all=True)
    except QuoteError:
        return
    assert edit.inserted == follow_line_breaks(text, new)
    pos, rebuilt = 0, ""
    for start, end in edit.spans:
        assert pos <= start < end <= len(text)
        rebuilt += text[pos:start] + edit.inserted
        pos = end
        # what was replaced is what was quoted, up to normalisation
        if edit.normalised:
            assert normalise(text[start:end], ignore_indent=True) == normalise(
                old, ignore_indent=True
            )
        else:
            assert text[start:end] == old
    assert edit.text == rebuilt + text[pos:]
    first, last = edit.spans[0][0], edit.spans[-1][1]
    assert edit.text[:first] == text[:first]
    assert edit.text[len(edit.text) - (len(text) - last) :] == text[last:]


@st.composite
def text_and_substring(draw: st.DrawFn) -> tuple[str, str]:
    text = draw(st.text(min_size=1, max_size=60))
    i = draw(st.integers(0, len(text) - 1))
    j = draw(st.integers(i + 1, len(text)))
    return text, text[i:j]


def _occurrences(text: str, old: str) -> int:
    return sum(text.startswith(old, i) for i in range(len(text)))


@given(text_and_substring(), st.text(max_size=10))
def test_unique_exact_edit_is_str_replace(pair: tuple[str, str], new: str) -> None:
    text, old = pair
    assume(_occurrences(text, old) == 1)
    edit = replace_quoted(text, old, new)
    assert edit.text == text.replace(old, follow_line_breaks(text, new), 1)
    assert not edit.normalised


@given(text_and_substring())
def test_replacing_with_same_string_is_identity(pair: tuple[str, str]) -> None:
    text, old = pair
    assert replace_quoted(text, old, old, replace_all=True).text == text
    if _occurrences(text, old) == 1:
        assert replace_quoted(text, old, old).text == text


@given(st.text(ALPHABET, max_size=40))
def test_normalise_is_idempotent(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once


# --- line breaks of what is inserted, and Nocturne's literal-\n fallback -----------------------


def test_new_string_follows_the_texts_crlf_line_breaks() -> None:
    text = "one\r\ntwo\r\nthree\r\n"
    edit = replace_quoted(text, "two", "2a\n2b")
    assert edit.text == "one\r\n2a\r\n2b\r\nthree\r\n"
    assert replace_quoted(text, "two\r\n", "2\n").text == "one\r\n2\r\nthree\r\n"
    # LF and mixed texts take new_string as given
    assert replace_quoted("a\nb", "b", "c\r\nd").text == "a\nc\r\nd"
    assert replace_quoted("a\r\nb\nc", "c", "x\ny").text == "a\r\nb\nx\ny"
    assert append_text("a\r\nb", "c\nd") == "a\r\nb\r\nc\r\nd"


def test_literal_backslash_n_in_the_quote_matches_line_breaks() -> None:
    text = "first line\nsecond line\nthird"
    edit = replace_quoted(text, "first line\\nsecond line", "1\\n2")
    assert edit.literal_newlines and not edit.normalised
    assert edit.text == "1\n2\nthird"
    # an escaped backslash-n stays as it is; a real occurrence of backslash-n wins
    code = 'print("a\\nb")\nprint("a")'
    assert replace_quoted(code, 'print("a\\nb")', "x").text == 'x\nprint("a")'
    assert not replace_quoted(code, 'print("a\\nb")', "x").literal_newlines


def test_literal_backslash_n_falls_through_when_ambiguous() -> None:
    text = "a\nb\na\nb"
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, "a\\nb", "x")
    assert info.value.kind == "not_found"
    assert replace_quoted(text, "a\\nb", "x", replace_all=True).text == "x\nx"


# --- bounded cost -----------------------------------------------------------------------------


def _prose(size: int, seed: int = 7) -> str:
    words = ["alpha", "beta", "gamma", "delta", "tea", "noon", "memory", "the", "a", "of"]
    rng, lines, total = __import__("random").Random(seed), [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(12))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def test_a_slightly_wrong_long_quote_in_a_megabyte_fails_fast_with_a_hint() -> None:
    """Issue 13: the closest-match search took 197 s at 32k characters. Now the matcher and the
    hint are bounded: a 1 MB text and a 32k quote with one wrong character answer in well under
    a generous bound, and the hint still points at the place."""
    import time

    text = _prose(1_000_000)
    at = len(text) // 3
    quote = text[at : at + 32_000]
    wrong = quote[:16_000] + ("X" if quote[16_000] != "X" else "Y") + quote[16_001:]
    line = text.count("\n", 0, at) + 1
    began = time.monotonic()
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, wrong, "replacement")
    assert time.monotonic() - began < 20  # generous: about 1 s on a loaded 2-core machine
    err = info.value
    assert err.kind == "not_found"
    assert err.lines and abs(err.lines[0] - line) <= 1
    assert "% similar" in str(err) and "The first 1" in str(err) and "more lines" in str(err)
    assert len(str(err)) < 5_000  # a hint, not the memory back


def test_one_long_line_quote_gets_the_cheap_hint() -> None:
    text = "a" * 1_000_000
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, "a" * 32_000 + "b", "x")
    assert "The first 32000 characters of old_string match" in str(info.value)


def test_a_quote_that_nearly_matches_everywhere_is_refused_as_too_costly() -> None:
    """Every place "." x 32000 matches in "…" x 300k cuts an ellipsis in two: the matcher gives up
    after a bounded amount of comparing instead of checking 900k places."""
    with pytest.raises(QuoteError) as info:
        replace_quoted("\u2026" * 300_000, "." * 32_000, "x", replace_all=True)
    assert info.value.kind == "too_costly" and "append" in str(info.value)


def test_many_matches_are_counted_up_to_a_bound() -> None:
    with pytest.raises(QuoteError) as info:
        replace_quoted("x\n" * 100_000, "x", "y")
    err = info.value
    assert err.kind == "ambiguous" and "more than 20 places" in str(err)
    assert err.lines == tuple(range(1, 21))
    assert replace_quoted("ab" * 500_000, "ab" * 16_000, "c", replace_all=True).text == "c" * 31 + (
        "ab" * 4_000
    )


# --- properties of the fast paths -------------------------------------------------------------


def _reference_normalise(text: str, ignore_indent: bool) -> str:
    """The straightforward per-character normalisation (the form the fast path must agree with)."""
    from noon.graph import quote as q

    atoms, i = [], 0
    while i < len(text):
        j = i + 1
        while j < len(text) and q._joins(text, i, j):
            j += 1
        form = text[i:j]
        if not form.isascii():
            form = unicodedata.normalize("NFC", form.translate(q._CHAR_MAP)).translate(q._CHAR_MAP)
        atoms.append(form)
        i = j
    out, line_start, k = [], True, 0
    while k < len(atoms):
        form = atoms[k]
        k += 1
        if form in (" ", "\t"):
            while k < len(atoms) and atoms[k] in (" ", "\t", ""):
                k += 1
            if k == len(atoms) or atoms[k] in ("\r", "\n") or (line_start and ignore_indent):
                continue
            out.append(" ")
            line_start = False
        elif form in ("\r", "\n"):
            if form == "\r" and k < len(atoms) and atoms[k] == "\n":
                k += 1
            out.append("\n")
            line_start = True
        elif form:
            out.append(form)
            line_start = False
    return "".join(out)


@given(st.text(ALPHABET + "x\u0308\u1100\u1161", max_size=60), st.booleans())
def test_fast_normalisation_agrees_with_the_reference(text: str, ignore_indent: bool) -> None:
    fast, starts, ends = normalise_mapped(text, ignore_indent=ignore_indent)
    assert fast == _reference_normalise(text, ignore_indent)
    assert len(starts) == len(ends) == len(fast)
    assert fast.count("\n") == len(re.findall(r"\r\n|\r|\n", text))  # one line per line
    for i in range(len(fast)):
        assert 0 <= starts[i] < ends[i] <= len(text)
        if i:  # spans in order: one span for all characters of a cluster, else disjoint
            same = (starts[i], ends[i]) == (starts[i - 1], ends[i - 1])
            assert same or ends[i - 1] <= starts[i]


@given(text_and_substring(), st.booleans())
def test_match_counting_agrees_with_brute_force(pair: tuple[str, str], replace_all: bool) -> None:
    text, old = pair
    count = _occurrences(text, old)
    new = "\ue000"  # a private-use character st.text() practically never draws
    assume(new not in text)
    if replace_all:
        assert replace_quoted(text, old, new, replace_all=True).text == text.replace(old, new)
    elif count == 1:
        assert replace_quoted(text, old, new).text == text.replace(old, new)
    else:
        with pytest.raises(QuoteError) as info:
            replace_quoted(text, old, new)
        assert info.value.kind == "ambiguous"
        shown = str(count) if count <= 20 else "more than 20"
        assert f"matches {shown} places" in str(info.value)


@given(
    st.text(ALPHABET + "xyz", max_size=300),
    st.text(ALPHABET + "xyz", min_size=1, max_size=80),
    st.integers(0, 5_000),
)
def test_the_hint_never_spends_more_than_its_budget(text: str, old: str, limit: int) -> None:
    budget = Budget(limit)
    hay, needle = normalise(text, ignore_indent=True), normalise(old, ignore_indent=True)
    lines, found = not_found_message(hay, needle, re.split(r"\r\n|\r|\n", text), budget)
    assert budget.spent <= limit
    assert all(1 <= n <= text.count("\n") + text.count("\r") + 1 for n in found)
    assert all(isinstance(line, str) for line in lines)


@given(st.lists(st.sampled_from(["tea", "noon", "deploy on fridays", "backup"]), min_size=3))
def test_a_one_word_typo_is_pointed_at_its_line(lines: list[str]) -> None:
    text = "\n".join(f"{i}: {line}" for i, line in enumerate(lines))
    target = len(lines) // 2
    typo = f"{target}: {lines[target]}X"
    with pytest.raises(QuoteError) as info:
        replace_quoted(text, typo, "y")
    assert info.value.lines[0] == target + 1
