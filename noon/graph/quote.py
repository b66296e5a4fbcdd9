"""Edit a memory's text by quoting: find ``old`` in the text and replace it with ``new``.

Agents copy passages out of what they read, and the copy drifts: curly quotes come back straight,
NBSPs become spaces, CRLF becomes LF, "é" arrives decomposed, a newline arrives as the two
characters backslash-n. Exact matching comes first; then (Nocturne's fallback) the quote with
literal ``\\n`` turned into line breaks; only then are normalised forms of the text and the quote
compared. Every normalised character remembers the span of the original it came from (the
position map), so an edit always splices the ORIGINAL text: outside the matched span nothing
changes, byte for byte. What is inserted follows the text's line breaks (CRLF text, CRLF insert).

Cost is bounded for any input (texts and quotes of a megabyte each): normalisation is linear and
runs at C speed outside the rare non-ASCII and whitespace runs; matching looks at a bounded number
of places (:data:`MATCH_BUDGET`); the closest-candidate hint of a failed quote spends at most
:data:`HINT_BUDGET` units of similarity work and degrades to a cheap "matches up to here" hint.

Pure: no I/O, no state.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from noon.errors import Invalid
from noon.graph.quote_hint import Budget, not_found_message

__all__ = [
    "MATCH_BUDGET",
    "Budget",
    "QuoteEdit",
    "QuoteError",
    "append_text",
    "follow_line_breaks",
    "normalise",
    "normalise_mapped",
    "replace_quoted",
]

MAX_LISTED = 20
"""Matches an ambiguity error lists (and counts exactly) at most."""
MATCH_BUDGET = 20_000_000
"""Characters compared while looking for normalised matches before the quote is refused as too
costly (only a quote that occurs, or nearly occurs, at very many overlapping places gets near)."""

_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\u301d\u301e\uff02"
_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u2035\u2039\u203a\u00b4\u02bc\uff07"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_SPACES = "\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u202f\u205f\u3000"
# Invisible characters that agents never reproduce: soft hyphen, zero-width space, word joiner,
# BOM. (ZWJ/ZWNJ are left alone: they change how emoji and Indic scripts render.)
_INVISIBLE = "\u00ad\u200b\u2060\ufeff"

# One entry per original character; values may be longer ("…" -> "...") or empty (dropped).
_CHAR_MAP: dict[int, str] = {
    **{ord(c): '"' for c in _DOUBLE_QUOTES},
    **{ord(c): "'" for c in _SINGLE_QUOTES},
    **{ord(c): "-" for c in _DASHES},
    **{ord(c): " " for c in _SPACES},
    **{ord(c): "" for c in _INVISIBLE},
    ord("\u2026"): "...",
}

_MAPPED = re.compile("[" + re.escape("".join(map(chr, _CHAR_MAP))) + "]")
_BLANK = " \t"
_EOL = "\r\n"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LITERAL_NEWLINE = re.compile(r"(?<!\\)\\n")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Runs the second normalisation stage changes: line breaks other than LF, blank runs with a tab
# or of two or more, blanks before a line break or at the end, and (ignoring indentation)
# blanks at a line start. A lone space between words is left alone (it maps to itself).
_SPECIAL = r"\r\n?|[ \t]*\t[ \t]*|  +|[ \t]+(?=[\r\n])|[ \t]+\Z"
_SPECIAL_RUNS = {
    False: re.compile(_SPECIAL),
    True: re.compile(r"(?:(?<=[\r\n])|\A)[ \t]+|" + _SPECIAL),
}

Mapped = tuple[str, array, array]
"""A normalised text with, per character, the start and end of the original span it came from."""


@dataclass(frozen=True, slots=True)
class QuoteEdit:
    """Result of :func:`replace_quoted`.

    ``spans`` are ``(start, end)`` offsets into the ORIGINAL text, sorted and disjoint; the new
    text is the original with exactly those slices replaced by ``inserted`` (``new`` with the
    text's line breaks). ``normalised`` is true when the quote only matched after normalisation;
    ``literal_newlines`` when it matched once its literal ``\\n`` became line breaks.
    """

    text: str
    spans: tuple[tuple[int, int], ...]
    normalised: bool
    inserted: str = ""
    literal_newlines: bool = False


class QuoteError(Invalid):
    """The quote cannot be applied; the message is written for the agent to act on.

    ``kind`` is ``"empty"``, ``"ambiguous"``, ``"not_found"`` or ``"too_costly"``. ``lines``
    holds the 1-based line numbers of the matches (ambiguous) or of the closest candidates.
    """

    def __init__(
        self,
        kind: Literal["empty", "ambiguous", "not_found", "too_costly"],
        message: str,
        *,
        lines: tuple[int, ...] = (),
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.lines = lines


# --- normalisation with a position map -------------------------------------------------------


def _joins(text: str, head_start: int, j: int) -> bool:
    """Whether ``text[j]`` belongs to the cluster ``text[head_start:j]`` for NFC purposes."""
    c = text[j]
    head = text[head_start]
    if c.isascii() or head in _EOL or head in _BLANK or head in _SPACES:
        # ASCII is never the second half of a canonical composition; line breaks and blanks stay
        # alone so a stray combining mark can hide neither (every blank and line break of the
        # normalised text is then a whole cluster of its own).
        return False
    if unicodedata.combining(c) or c in _INVISIBLE:
        return True  # invisibles ride along so a mark after one still reaches its base
    # Starters that still compose backwards (Hangul jamo, some Indic vowel signs).
    cluster = text[head_start:j]
    nfc = unicodedata.normalize
    return nfc("NFC", cluster + c) != nfc("NFC", cluster) + nfc("NFC", c)


def _offsets(n: int) -> array:
    """0 .. n: what identity stretches of the position map are sliced from (memcpy speed)."""
    return array("q", range(n + 1))


def _plain(run: str) -> bool:
    """Whether every character of ``run`` is a cluster of its own that maps to itself: nothing
    mapped or invisible, no combining mark, already NFC (so no two neighbours compose). Checked
    at C speed, so text in scripts that need no normalisation is not walked in Python."""
    return (
        _MAPPED.search(run) is None
        and unicodedata.is_normalized("NFC", run)
        and not any(map(unicodedata.combining, run))
    )


def _clusters(text: str) -> Mapped:
    """Stage one: every cluster (a character plus what composes with it) NFC'd and mapped.

    ASCII maps to itself, so only the non-ASCII runs (and the ASCII character that may head a
    cluster before one) are walked in Python. Normalising per cluster agrees with whole-string
    NFC except across unusual cluster boundaries; both sides of a match are cut the same way, so
    this only costs recall.
    """
    n = len(text)
    offsets = _offsets(n)
    if text.isascii():
        return text, offsets[:n], offsets[1:]
    pieces: list[str] = []
    starts, ends = array("q"), array("q")
    pos = 0
    for run in _NON_ASCII.finditer(text):
        k = run.start()
        if k > pos and text[k - 1] not in _EOL and text[k - 1] not in _BLANK:
            k -= 1  # "e" + U+0301: the ASCII base heads the cluster
        if _plain(text[k : run.end()]):
            continue  # maps to itself: stays in the identity stretch
        pieces.append(text[pos:k])
        starts += offsets[pos:k]
        ends += offsets[pos + 1 : k + 1]
        while k < run.end():
            j = k + 1
            while j < n and _joins(text, k, j):
                j += 1
            form = text[k:j]
            if not form.isascii():
                # Map first so dropped invisibles do not block composition, again after NFC for
                # singletons that NFC turns into mapped characters (U+2000 -> U+2002 -> " ").
                form = unicodedata.normalize("NFC", form.translate(_CHAR_MAP)).translate(_CHAR_MAP)
            pieces.append(form)
            starts.extend([k] * len(form))
            ends.extend([j] * len(form))
            k = j
        pos = k
    pieces.append(text[pos:])
    return "".join(pieces), starts + offsets[pos:n], ends + offsets[pos + 1 :]


def normalise_mapped(text: str, *, ignore_indent: bool = False) -> Mapped:
    """Normalise ``text``; return it with, per character, the start and end of its source span.

    Line breaks (CRLF, CR, LF) become ``\\n``; blanks (spaces, tabs, Unicode spaces) at a line
    end are dropped; other runs of blanks become one space, or vanish at a line start when
    ``ignore_indent``. A collapsed run maps to the whole run, so replacing it replaces all of it.
    One normalised line per original line, always.
    """
    forms, form_starts, form_ends = _clusters(text)
    pieces: list[str] = []
    starts, ends = array("q"), array("q")
    pos, n = 0, len(forms)

    def keep(upto: int) -> None:
        pieces.append(forms[pos:upto])
        starts.extend(form_starts[pos:upto])
        ends.extend(form_ends[pos:upto])

    def emit(char: str, start: int, end: int) -> None:
        pieces.append(char)
        starts.append(start)
        ends.append(end)

    for run in _SPECIAL_RUNS[ignore_indent].finditer(forms):
        s, e = run.span()
        keep(s)
        pos = e
        if forms[s] == "\r":
            if e - s == 2 and form_ends[s] != form_starts[s + 1]:
                # "\r" and "\n" that only met because an invisible between them vanished:
                # two line breaks, as in the original
                emit("\n", form_starts[s], form_ends[s])
                pos = s + 1
                continue
            emit("\n", form_starts[s], form_ends[e - 1])
        elif (
            e < n
            and forms[e] not in _EOL
            and not (ignore_indent and (s == 0 or forms[s - 1] in _EOL))
        ):
            emit(" ", form_starts[s], form_ends[e - 1])
    keep(n)
    return "".join(pieces), starts, ends


def normalise(text: str, *, ignore_indent: bool = False) -> str:
    """The form quotes are compared in when they do not match verbatim (see module docstring)."""
    return normalise_mapped(text, ignore_indent=ignore_indent)[0]


# --- matching ---------------------------------------------------------------------------------


def _hits(haystack: str, needle: str, *, after_hit: int) -> Iterator[int]:
    """Starts of ``needle`` in ``haystack``, left to right. ``after_hit`` is where the search goes
    on after each hit relative to it (1: overlapping hits too). Each ``str.find`` is linear."""
    i = haystack.find(needle)
    while i != -1:
        yield i
        i = haystack.find(needle, i + after_hit)


def _exact_spans(text: str, old: str, replace_all: bool) -> list[tuple[int, int]]:
    """Exact occurrences: with ``replace_all`` every non-overlapping one (leftmost first);
    otherwise up to ``MAX_LISTED + 1`` overlapping ones (enough to tell unique from not)."""
    if replace_all:
        return [(i, i + len(old)) for i in _hits(text, old, after_hit=len(old))]
    spans = []
    for i in _hits(text, old, after_hit=1):
        spans.append((i, i + len(old)))
        if len(spans) > MAX_LISTED:
            break
    return spans


def _line_start(text: str, pos: int) -> int:
    return max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1


def _normalised_spans(
    text: str, old: str, replace_all: bool, budget: Budget
) -> list[tuple[int, int]]:
    """Original spans of the normalised matches of ``old`` (as :func:`_exact_spans` counts them).

    Pass 1 collapses indentation to one space (amount ignored, presence kept). Pass 2, tried only
    when pass 1 finds nothing, ignores indentation altogether; a quote that starts with
    indentation must then match a whole line, and its span takes in that line's indentation so
    the indentation in ``new`` replaces it instead of adding to it.
    """
    indented_quote = normalise(old).startswith(" ")
    for ignore_indent in (False, True):
        hay, starts, ends = normalise_mapped(text, ignore_indent=ignore_indent)
        needle = normalise(old, ignore_indent=ignore_indent)
        if not needle:
            return []
        spans: list[tuple[int, int]] = []
        a = hay.find(needle)
        while a != -1:
            if not budget.charge(len(needle)):
                raise QuoteError(
                    "too_costly",
                    "old_string nearly matches at too many overlapping places to check them "
                    "all. Quote a passage that occurs once, or use append.",
                )
            b, after = a + len(needle), a + 1
            # A match must cover whole source spans: ".." must not eat two thirds of "…", and a
            # collapsed run of blanks is taken entirely or not at all.
            cuts_head = a > 0 and starts[a - 1] == starts[a]
            cuts_tail = b < len(hay) and starts[b] == starts[b - 1]
            at_line = not (ignore_indent and indented_quote) or a == 0 or hay[a - 1] == "\n"
            if not (cuts_head or cuts_tail) and at_line:
                start, end = starts[a], ends[b - 1]
                if ignore_indent and indented_quote:
                    start = _line_start(text, start)
                spans.append((start, end))
                if replace_all:
                    after = b  # leftmost first, non-overlapping, like str.replace
                elif len(spans) > MAX_LISTED:
                    break
            a = hay.find(needle, after)
        if spans:
            return spans
    return []


def _line_numbers(text: str, positions: list[int]) -> tuple[int, ...]:
    """1-based line numbers of sorted ``positions``, in one pass over the text."""
    lines, line, pos = [], 1, 0
    for p in positions:
        line += len(_LINE_BREAK.findall(text, pos, p))
        pos = p
        lines.append(line)
    return tuple(lines)


def _ambiguous(text: str, spans: list[tuple[int, int]], normalised: bool) -> QuoteError:
    lines = _line_numbers(text, [start for start, _ in spans[:MAX_LISTED]])
    where = ", ".join(map(str, dict.fromkeys(lines)))
    how = " after normalisation (quotes, dashes, whitespace)" if normalised else ""
    count = f"more than {MAX_LISTED}" if len(spans) > MAX_LISTED else str(len(spans))
    return QuoteError(
        "ambiguous",
        f"old_string matches {count} places{how} (line{'s' if len(set(lines)) > 1 else ''} "
        f"{where}{', ...' if len(spans) > MAX_LISTED else ''}). Include more surrounding "
        "context to make it unique, or set replace_all to replace every occurrence.",
        lines=lines,
    )


def _not_found(text: str, old: str) -> QuoteError:
    head = (
        "old_string not found, not even after normalising quotes, dashes, whitespace, line "
        "endings and Unicode composition. Re-read the text and copy the passage exactly."
    )
    if not normalise(old):
        return QuoteError("not_found", head + " (old_string is only whitespace.)")
    hint, lines = not_found_message(
        normalise(text, ignore_indent=True),
        normalise(old, ignore_indent=True).strip("\n"),
        _LINE_BREAK.split(text),
    )
    return QuoteError("not_found", "\n".join([head, *hint]), lines=lines)


# --- public API -------------------------------------------------------------------------------


def follow_line_breaks(text: str, insert: str) -> str:
    """``insert`` with the line breaks of ``text``: CRLF when the text uses CRLF throughout,
    ``insert`` unchanged otherwise."""
    if (
        "\r\n" in text
        and text.count("\n") == text.count("\r\n")
        and ("\n" in insert or "\r" in insert)
    ):
        return _LINE_BREAK.sub("\r\n", insert)
    return insert


def replace_quoted(text: str, old: str, new: str, *, replace_all: bool = False) -> QuoteEdit:
    """Replace the passage ``old`` of ``text`` with ``new``.

    Exact occurrences win; then ``old`` with its literal ``\\n`` made line breaks, when that
    occurs exactly (once, unless ``replace_all``; ``new`` is then converted the same way);
    normalised matching is tried only after both, so an exact match is never widened, and an
    ambiguous exact quote is never rescued by normalisation. More than one match (overlapping
    ones count) is refused unless ``replace_all``, which replaces non-overlapping matches
    leftmost-first. ``new`` is inserted verbatim but for its line breaks, which follow the
    text's. Raises :class:`QuoteError`.
    """
    if not old:
        raise QuoteError(
            "empty", "old_string is empty: quote the exact text to replace (or append instead)."
        )
    literal = False
    spans = _exact_spans(text, old, replace_all)
    normalised = not spans
    if normalised and "\\n" in old:
        converted = _LITERAL_NEWLINE.sub("\n", old)
        found = _exact_spans(text, converted, replace_all) if converted != old else []
        if len(found) == 1 or (replace_all and found):
            spans, normalised, literal = found, False, True
            new = _LITERAL_NEWLINE.sub("\n", new)
    if normalised:
        spans = _normalised_spans(text, old, replace_all, Budget(MATCH_BUDGET))
    if not spans:
        raise _not_found(text, old)
    if len(spans) > 1 and not replace_all:
        raise _ambiguous(text, spans, normalised)
    inserted = follow_line_breaks(text, new)
    # INVARIANT: the result is the original text with exactly the slices in `spans` swapped for
    # `inserted`; every character outside them is copied from `text` unchanged. Normalisation
    # only decides WHERE the spans are (through the position map), never what surrounds them.
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        parts += (text[pos:start], inserted)
        pos = end
    parts.append(text[pos:])
    return QuoteEdit(
        text="".join(parts),
        spans=tuple(spans),
        normalised=normalised,
        inserted=inserted,
        literal_newlines=literal,
    )


def append_text(text: str, addition: str) -> str:
    """Append ``addition`` as new line(s): one line break is added only if neither side has one.

    Line breaks follow the text's style (CRLF when the text uses CRLF throughout).
    """
    addition = follow_line_breaks(text, addition)
    if not text or not addition or text.endswith(tuple(_EOL)) or addition.startswith(tuple(_EOL)):
        return text + addition
    return text + follow_line_breaks(text, "\n") + addition
