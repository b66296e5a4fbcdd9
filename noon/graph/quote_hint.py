"""What a failed quote edit tells the agent: the closest places in the text, and how far the quote
matched before it went wrong.

Both are computed on the normalised text and quote (one normalised line per original line), under
a work budget rather than a timer: similarity scoring (``difflib``, quadratic in the worst case)
spends at most :data:`HINT_BUDGET` units (a unit is about one character compared) and stops where
the budget ends, keeping what it found; each single comparison is capped at :data:`RATIO_CAP`,
beyond which characters are compared line by line, or not at all. The "matches up to here" hint is
a binary search with ``str.find`` (linear, C speed): cheap for any size, so it is always given.

Pure: no I/O, no state.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

HINT_BUDGET = 2_000_000
"""Units of similarity work one failed quote may cost (a few tenths of a second at most)."""
RATIO_CAP = 250_000
"""Largest estimated cost of one comparison: ``len(a) * len(b)`` character by character (about
500 x 500), or four times the equal (line, line) pairs line by line."""
VOTED = 12
"""Candidate windows taken from the lines a multi-line quote shares with the text."""
SHOWN_LINES = 12
"""Lines of a candidate window quoted back at most."""
MIN_MATCHED = 16
EXCERPT = 40


class Budget:
    """Units of work left; a step is taken only if it can be paid for in full."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    def charge(self, units: int) -> bool:
        if self.spent + units > self.limit:
            return False
        self.spent += units
        return True


@dataclass(frozen=True, slots=True)
class Candidate:
    similarity: float
    first: int
    """0-based index of the window's first line."""
    width: int


def _voted_starts(
    hay_lines: Sequence[str], needle_lines: Sequence[str], last_start: int, budget: Budget
) -> list[int]:
    """Window starts that line up the most lines a multi-line quote shares verbatim with the
    text (each shared line votes for the start that would put it in place)."""
    if len(needle_lines) < 2 or not budget.charge(len(hay_lines)):
        return []
    wanted = {line for line in needle_lines if line.strip()}
    index: dict[str, list[int]] = {}
    for i, line in enumerate(hay_lines):
        if line in wanted:
            index.setdefault(line, []).append(i)
    votes: Counter[int] = Counter()
    for j, line in enumerate(needle_lines):
        hits = index.get(line, ())
        if not budget.charge(len(hits) + 1):
            break
        for i in hits:
            votes[min(max(i - j, 0), last_start)] += 1
    return [start for start, _ in votes.most_common(VOTED)]


def _line_pairs(lines: list[str], needle_lines: list[str]) -> int:
    """How many (window line, quote line) pairs are equal: what comparing the two as lists of
    lines costs ``difflib`` per pass (about the line count when lines are distinct)."""
    counts = Counter(needle_lines)
    return sum(counts[line] for line in lines)


def _similarity(
    matcher: SequenceMatcher[str],
    window: str,
    needle: str,
    lines: list[str],
    needle_lines: list[str],
    budget: Budget,
) -> float | None:
    """``difflib`` similarity of ``window`` and ``needle``: by characters when affordable, else
    by lines when those are distinct enough to be cheap, else unknown (None)."""
    chars = len(window) * len(needle)
    if chars <= RATIO_CAP:
        return matcher.ratio() if budget.charge(chars) else None
    if not budget.charge(len(lines) + len(needle_lines)):
        return None
    pairs = 4 * (_line_pairs(lines, needle_lines) + len(lines) + len(needle_lines))
    if pairs <= RATIO_CAP and budget.charge(pairs):
        return SequenceMatcher(None, lines, needle_lines, autojunk=False).ratio()
    return None


def closest(hay: str, needle: str, budget: Budget, limit: int = 3) -> list[Candidate]:
    """Up to ``limit`` windows of lines of ``hay`` most like ``needle``, best first, scored
    within ``budget``; near-ties with the best one, not every weak candidate."""
    hay_lines = hay.split("\n")
    needle_lines = needle.split("\n")
    width = min(len(needle_lines), len(hay_lines))
    last_start = len(hay_lines) - width
    starts: Sequence[int] = _voted_starts(hay_lines, needle_lines, last_start, budget)
    if not starts:
        starts = range(last_start + 1)
    if not budget.charge(len(needle)):
        return []
    matcher: SequenceMatcher[str] = SequenceMatcher(autojunk=False)
    matcher.set_seq2(needle)
    best: list[tuple[float, int]] = []  # min-heap of (similarity, -start)
    for i in starts:
        lines = hay_lines[i : i + width]
        if not budget.charge(sum(map(len, lines)) + len(needle) + 2 * width):
            break
        window = "\n".join(lines)
        if not window.strip():
            continue
        floor = best[0][0] if len(best) == limit else 0.0
        matcher.set_seq1(window)
        if matcher.real_quick_ratio() <= floor or matcher.quick_ratio() <= floor:
            continue
        similarity = _similarity(matcher, window, needle, lines, needle_lines, budget)
        if similarity is None or similarity <= floor:
            continue
        if len(best) < limit:
            heapq.heappush(best, (similarity, -i))
        else:
            heapq.heapreplace(best, (similarity, -i))
    ranked = sorted(best, reverse=True)
    if not ranked:
        return []
    cutoff = min(0.6, ranked[0][0])
    return [Candidate(s, -neg_i, width) for s, neg_i in ranked if s >= cutoff]


def _longest(found: Callable[[int], bool], size: int) -> int:
    """The largest ``k <= size`` for which ``found(k)`` holds (it holds for 0 and is monotone)."""
    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if found(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def divergence(hay: str, needle: str) -> str | None:
    """Where the quote stops matching: the longest start (or end) of ``needle`` found in ``hay``,
    and what follows (or precedes) it on each side. About ``2 log2(len(needle))`` linear scans."""
    prefix = _longest(lambda k: needle[:k] in hay, len(needle))
    suffix = _longest(lambda k: needle[len(needle) - k :] in hay, len(needle))
    if max(prefix, suffix) < min(MIN_MATCHED, len(needle) // 2) or max(prefix, suffix) == len(
        needle
    ):
        return None
    if prefix >= suffix:
        at = hay.find(needle[:prefix]) + prefix
        line = hay.count("\n", 0, at) + 1
        return (
            f"The first {prefix} characters of old_string match the text (up to line {line}); "
            f"then the text has {hay[at : at + EXCERPT]!r} where old_string has "
            f"{needle[prefix : prefix + EXCERPT]!r}."
        )
    at = hay.find(needle[len(needle) - suffix :])
    line = hay.count("\n", 0, at) + 1
    cut = len(needle) - suffix
    return (
        f"The last {suffix} characters of old_string match the text (from line {line}); "
        f"before that the text has {hay[max(0, at - EXCERPT) : at]!r} where old_string has "
        f"{needle[max(0, cut - EXCERPT) : cut]!r}."
    )


def _shown(line: str) -> str:
    line = line.rstrip()
    return "    " + (line if len(line) <= 200 else line[:197] + "...")


def not_found_message(
    hay: str, needle: str, original_lines: Sequence[str], budget: Budget | None = None
) -> tuple[list[str], tuple[int, ...]]:
    """Hint lines for a quote not found in the text (``hay`` and ``needle`` normalised, one
    line of ``hay`` per line of ``original_lines``), and the 1-based lines it points at."""
    candidates = closest(hay, needle, budget or Budget(HINT_BUDGET))
    parts: list[str] = []
    if candidates:
        parts.append("Closest candidate(s):")
    for c in candidates:
        last = c.first + c.width
        label = f"line {c.first + 1}" if c.width == 1 else f"lines {c.first + 1}-{last}"
        parts.append(f"  {label} ({round(c.similarity * 100)}% similar):")
        shown = original_lines[c.first : min(last, c.first + SHOWN_LINES)]
        parts += [_shown(line) for line in shown]
        if c.width > SHOWN_LINES:
            parts.append(f"    ... ({c.width - SHOWN_LINES} more lines)")
    where = divergence(hay, needle)
    if where is not None:
        parts.append(where)
    return parts, tuple(c.first + 1 for c in candidates)
