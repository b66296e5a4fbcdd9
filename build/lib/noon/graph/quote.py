"""Edit a memory's text by quoting: find ``old`` in the text and replace it with ``new``.

Agents copy passages out of what they read, and the copy drifts: curly quotes come back straight,
NBSPs become spaces, CRLF becomes LF, "é" arrives decomposed. Exact matching comes first; only when
the quote does not occur verbatim are normalised forms of the text and the quote compared. Every
normalised character remembers the span of the original it came from (the position map), so an
edit always splices the ORIGINAL text: outside the matched span nothing changes, byte for byte.

Pure: no I/O, no state.
"""

from __future__ import annotations

import difflib
import heapq
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from noon.errors import NoonError

__all__ = ["QuoteEdit", "QuoteError", "append_text", "normalise", "replace_quoted"]

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

_BLANK = (" ", "\t")
_EOL = ("\r", "\n")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

_Atom = tuple[str, int, int]  # (normalised form, start, end) of a span of the original


@dataclass(frozen=True, slots=True)
class QuoteEdit:
    """Result of :func:`replace_quoted`.

    ``spans`` are ``(start, end)`` offsets into the ORIGINAL text, sorted and disjoint; the new
    text is the original with exactly those slices replaced. ``normalised`` is true when the
    quote only matched after normalisation (no verbatim occurrence).
    """

    text: str
    spans: tuple[tuple[int, int], ...]
    normalised: bool


class QuoteError(NoonError, ValueError):
    """The quote cannot be applied; the message is written for the agent to act on.

    ``kind`` is ``"empty"``, ``"ambiguous"`` or ``"not_found"``. ``lines`` holds the 1-based line
    numbers of the matches (ambiguous) or of the closest candidates (not found).
    """

    def __init__(
        self,
        kind: Literal["empty", "ambiguous", "not_found"],
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
    if c.isascii() or text[head_start] in _EOL:
        # ASCII is never the second half of a canonical composition; line breaks stay alone so a
        # stray combining mark cannot hide one.
        return False
    if unicodedata.combining(c) or c in _INVISIBLE:
        return True  # invisibles ride along so a mark after one still reaches its base
    # Starters that still compose backwards (Hangul jamo, some Indic vowel signs).
    head = text[head_start:j]
    nfc = unicodedata.normalize
    return nfc("NFC", head + c) != nfc("NFC", head) + nfc("NFC", c)


def _atoms(text: str) -> list[_Atom]:
    """Cut ``text`` into clusters (a character plus what composes with it), each NFC'd and mapped.

    Clusters are disjoint and cover the text, so every normalised character maps to exactly one
    original span. Normalising per cluster agrees with whole-string NFC except across unusual
    cluster boundaries; both sides of a match are cut the same way, so this only costs recall.
    """
    atoms: list[_Atom] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and _joins(text, i, j):
            j += 1
        cluster = text[i:j]
        if not cluster.isascii():
            # Map first so dropped invisibles do not block composition, again after NFC for
            # singletons that NFC turns into mapped characters (U+2000 -> U+2002, U+1FFD -> ´).
            cluster = cluster.translate(_CHAR_MAP)
            cluster = unicodedata.normalize("NFC", cluster).translate(_CHAR_MAP)
        atoms.append((cluster, i, j))
        i = j
    return atoms


def _normalise(text: str, *, ignore_indent: bool) -> tuple[str, list[int], list[int]]:
    """Normalise ``text``; return it with, per character, the start and end of its source span.

    Line breaks (CRLF, CR, LF) become ``\\n``; blanks (spaces, tabs, Unicode spaces) at a line
    end are dropped; other runs of blanks become one space, or vanish at a line start when
    ``ignore_indent``. A collapsed run maps to the whole run, so replacing it replaces all of it.
    """
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []

    def emit(form: str, start: int, end: int) -> None:
        for ch in form:
            chars.append(ch)
            starts.append(start)
            ends.append(end)

    atoms = _atoms(text)
    at_line_start = True
    k, n = 0, len(atoms)
    while k < n:
        form, start, end = atoms[k]
        k += 1
        if form in _BLANK:
            while k < n and (atoms[k][0] in _BLANK or not atoms[k][0]):
                end = atoms[k][2]
                k += 1
            if k == n or atoms[k][0] in _EOL or (at_line_start and ignore_indent):
                continue
            emit(" ", start, end)
            at_line_start = False
        elif form in _EOL:
            if form == "\r" and k < n and atoms[k][0] == "\n":
                end = atoms[k][2]
                k += 1
            emit("\n", start, end)
            at_line_start = True
        elif form:  # an empty form (invisible character) emits nothing
            emit(form, start, end)
            at_line_start = False
    return "".join(chars), starts, ends


def normalise(text: str, *, ignore_indent: bool = False) -> str:
    """The form quotes are compared in when they do not match verbatim (see module docstring)."""
    return _normalise(text, ignore_indent=ignore_indent)[0]


# --- matching ---------------------------------------------------------------------------------


def _find_all(haystack: str, needle: str) -> list[int]:
    """Every start of ``needle`` in ``haystack``, overlapping ones included."""
    found: list[int] = []
    i = haystack.find(needle)
    while i != -1:
        found.append(i)
        i = haystack.find(needle, i + 1)
    return found


def _line_start(text: str, pos: int) -> int:
    return max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1


def _normalised_spans(text: str, old: str) -> list[tuple[int, int]]:
    """Original spans of the normalised matches of ``old``; overlapping ones included.

    Pass 1 collapses indentation to one space (amount ignored, presence kept). Pass 2, tried only
    when pass 1 finds nothing, ignores indentation altogether; a quote that starts with
    indentation must then match a whole line, and its span takes in that line's indentation so
    the indentation in ``new`` replaces it instead of adding to it.
    """
    indented_quote = normalise(old).startswith(" ")
    for ignore_indent in (False, True):
        hay, starts, ends = _normalise(text, ignore_indent=ignore_indent)
        needle = normalise(old, ignore_indent=ignore_indent)
        if not needle:
            return []
        spans: list[tuple[int, int]] = []
        for a in _find_all(hay, needle):
            b = a + len(needle)
            # A match must cover whole source spans: ".." must not eat two thirds of "…", and a
            # collapsed run of blanks is taken entirely or not at all.
            cuts_head = a > 0 and starts[a - 1] == starts[a]
            cuts_tail = b < len(hay) and starts[b] == starts[b - 1]
            if cuts_head or cuts_tail:
                continue
            start, end = starts[a], ends[b - 1]
            if ignore_indent and indented_quote:
                if a > 0 and hay[a - 1] != "\n":
                    continue
                start = _line_start(text, start)
            spans.append((start, end))
        if spans:
            return spans
    return []


def _non_overlapping(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Leftmost-first, like ``str.replace``."""
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept


def _line_no(text: str, pos: int) -> int:
    return 1 + len(_LINE_BREAK.findall(text, 0, pos))


# --- errors -----------------------------------------------------------------------------------


def _ambiguous(text: str, spans: list[tuple[int, int]], normalised: bool) -> QuoteError:
    lines = tuple(_line_no(text, start) for start, _ in spans)
    where = ", ".join(map(str, dict.fromkeys(lines)))
    how = " after normalisation (quotes, dashes, whitespace)" if normalised else ""
    return QuoteError(
        "ambiguous",
        f"old_string matches {len(spans)} places{how} (line{'s' if len(set(lines)) > 1 else ''} "
        f"{where}). Include more surrounding context to make it unique, or set replace_all "
        f"to replace every occurrence.",
        lines=lines,
    )


def _closest(text: str, old: str, limit: int = 3) -> list[tuple[float, int, int]]:
    """Up to ``limit`` windows of lines most like ``old``: (ratio, first line, line count)."""
    needle = normalise(old, ignore_indent=True).strip("\n")
    norm_lines = normalise(text, ignore_indent=True).split("\n")
    width = min(needle.count("\n") + 1, len(norm_lines))
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(needle)
    best: list[tuple[float, int]] = []  # min-heap of (ratio, -index)
    for i in range(len(norm_lines) - width + 1):
        window = "\n".join(norm_lines[i : i + width])
        if not window.strip():
            continue
        matcher.set_seq1(window)
        floor = best[0][0] if len(best) == limit else 0.0
        if matcher.real_quick_ratio() <= floor or matcher.quick_ratio() <= floor:
            continue
        entry = (matcher.ratio(), -i)
        if len(best) < limit:
            heapq.heappush(best, entry)
        elif entry > best[0]:
            heapq.heapreplace(best, entry)
    ranked = sorted(best, reverse=True)
    if not ranked:
        return []
    # Show near-ties with the best one, not every weak candidate.
    cutoff = min(0.6, ranked[0][0])
    return [(ratio, 1 - neg_i, width) for ratio, neg_i in ranked if ratio >= cutoff]


def _not_found(text: str, old: str) -> QuoteError:
    head = (
        "old_string not found, not even after normalising quotes, dashes, whitespace, line "
        "endings and Unicode composition. Re-read the text and copy the passage exactly."
    )
    if not normalise(old):
        return QuoteError("not_found", head + " (old_string is only whitespace.)")
    candidates = _closest(text, old)
    if not candidates:
        return QuoteError("not_found", head)
    original_lines = _LINE_BREAK.split(text)
    parts = [head, "Closest candidate(s):"]
    for ratio, first, width in candidates:
        label = f"line {first}" if width == 1 else f"lines {first}-{first + width - 1}"
        parts.append(f"  {label} ({round(ratio * 100)}% similar):")
        for line in original_lines[first - 1 : first - 1 + width]:
            line = line.rstrip()
            parts.append("    " + (line if len(line) <= 200 else line[:197] + "..."))
    return QuoteError("not_found", "\n".join(parts), lines=tuple(c[1] for c in candidates))


# --- public API -------------------------------------------------------------------------------


def replace_quoted(text: str, old: str, new: str, *, replace_all: bool = False) -> QuoteEdit:
    """Replace the passage ``old`` of ``text`` with ``new``.

    Exact occurrences win; normalised matching is tried only when there are none, so an exact
    match is never widened, and an ambiguous exact quote is never rescued by normalisation. More
    than one match (overlapping ones count) is refused unless ``replace_all``, which replaces
    non-overlapping matches leftmost-first. ``new`` is inserted verbatim. Raises
    :class:`QuoteError`.
    """
    if not old:
        raise QuoteError(
            "empty", "old_string is empty: quote the exact text to replace (or append instead)."
        )
    spans = [(i, i + len(old)) for i in _find_all(text, old)]
    normalised = not spans
    if normalised:
        spans = _normalised_spans(text, old)
    if not spans:
        raise _not_found(text, old)
    if len(spans) > 1 and not replace_all:
        raise _ambiguous(text, spans, normalised)
    spans = _non_overlapping(spans)
    # INVARIANT: the result is the original text with exactly the slices in `spans` swapped for
    # `new`; every character outside them is copied from `text` unchanged. Normalisation only
    # decides WHERE the spans are (through the position map), never what surrounds them.
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        parts += (text[pos:start], new)
        pos = end
    parts.append(text[pos:])
    return QuoteEdit(text="".join(parts), spans=tuple(spans), normalised=normalised)


def append_text(text: str, addition: str) -> str:
    """Append ``addition`` as new line(s): one line break is added only if neither side has one.

    The break follows the text's style (CRLF when the text uses CRLF throughout).
    """
    if not text or not addition or text.endswith(_EOL) or addition.startswith(_EOL):
        return text + addition
    crlf = "\r\n" in text and text.count("\n") == text.count("\r\n")
    return text + ("\r\n" if crlf else "\n") + addition
