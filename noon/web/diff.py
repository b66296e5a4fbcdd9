"""Line diffs of memory texts, as the page shows them (one rule for every diff on the page:
review, history, conflicts and the preview before saving an edit)."""

from __future__ import annotations

import difflib
from typing import Any

CONTEXT = 3
MAX_DIFF_CHARS = 400_000
"""Texts longer than this (either side) are not diffed line by line: the page says so."""
MAX_SHOWN_CHARS = 50_000
"""Characters of diff lines one diff shows at most; the rest is counted in a last ``…`` line."""


def text_diff(before: str | None, after: str | None) -> dict[str, Any]:
    """``{"lines": [[tag, text], ...], "added": n, "removed": n}`` with tag ``" "`` (context),
    ``"-"``, ``"+"`` or ``"…"`` (unchanged lines left out; its text says how many). A side that
    is None (the memory did not exist, or was deleted) diffs as empty. Texts too long to diff
    give ``{"too_large": true}`` with their sizes. At most :data:`MAX_SHOWN_CHARS` characters of
    lines are shown (``cut``: how many lines were left out, said in the last line)."""
    a, b = before or "", after or ""
    if len(a) > MAX_DIFF_CHARS or len(b) > MAX_DIFF_CHARS:
        return {"too_large": True, "before_chars": len(a), "after_chars": len(b)}
    old, new = a.splitlines(), b.splitlines()
    lines: list[list[str]] = []
    added = removed = 0
    shown_to = 0
    """Lines of ``old`` up to here are shown or accounted for."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        if group[0][1] > shown_to:
            lines.append(["…", f"{group[0][1] - shown_to} unchanged line(s)"])
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [[" ", line] for line in old[i1:i2]]
            if tag in ("replace", "delete"):
                lines += [["-", line] for line in old[i1:i2]]
                removed += i2 - i1
            if tag in ("replace", "insert"):
                lines += [["+", line] for line in new[j1:j2]]
                added += j2 - j1
        shown_to = group[-1][2]
    if added or removed:
        if len(old) > shown_to:
            lines.append(["…", f"{len(old) - shown_to} unchanged line(s)"])
    elif a != b:
        lines = [["…", "only line endings or a final newline differ"]]
    else:
        lines = []
    shown, cut = _bounded(lines)
    return {"lines": shown, "added": added, "removed": removed, "cut": cut}


def _bounded(lines: list[list[str]]) -> tuple[list[list[str]], int]:
    """``lines`` up to :data:`MAX_SHOWN_CHARS` characters, and how many were left out (then
    told in a last ``…`` line)."""
    budget = MAX_SHOWN_CHARS
    for i, (_, text) in enumerate(lines):
        budget -= len(text) + 1
        if budget < 0:
            cut = len(lines) - i
            note = f"{cut} more line(s) not shown: a diff shows {MAX_SHOWN_CHARS:,} characters"
            return [*lines[:i], ["…", note]], cut
    return lines, 0


def value_diff(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[list[Any]]:
    """Fields of two element values that differ: ``[[field, before, after], ...]`` (a missing
    side is None)."""
    a, b = before or {}, after or {}
    return [[k, a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
