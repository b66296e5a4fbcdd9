"""What changed between two versions of a memory's text, bounded for an agent to read.

Each change is one hunk: where it starts (line and column), a little context on either side and
what was removed and added, marked ``[-removed-]{+added+}``. Two different texts always give at
least one hunk, wherever they differ (the first 80 characters of both can be the same). Cost is
bounded: lines are matched (difflib) only while both texts have at most :data:`MAX_LINES`
lines; past that, or within one changed block, the hunk is the span between the longest common
prefix and suffix, found in linear time.
"""

from __future__ import annotations

from difflib import SequenceMatcher

CONTEXT = 30
"""Characters of unchanged text shown on either side of a change."""
SHOWN = 120
"""Characters of removed or added text shown per hunk."""
MAX_HUNKS = 4
MAX_LINES = 2000


def _clip(text: str, limit: int) -> str:
    flat = text.replace("\n", "⏎")
    return flat if len(flat) <= limit else f"{flat[:limit]}…(+{len(flat) - limit} chars)"


def _hunk(old: str, new: str, line: int) -> str:
    """One change: ``old`` became ``new`` (they differ), starting at 1-based ``line``."""
    limit = min(len(old), len(new))
    p = 0
    while p < limit and old[p] == new[p]:
        p += 1
    s = 0
    while s < limit - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    line += old.count("\n", 0, p)
    column = p - (old.rfind("\n", 0, p) + 1) + 1
    before = old[max(0, p - CONTEXT) : p]
    after = old[len(old) - s :][:CONTEXT]
    removed, added = old[p : len(old) - s], new[p : len(new) - s]
    change = (f"[-{_clip(removed, SHOWN)}-]" if removed else "") + (
        f"{{+{_clip(added, SHOWN)}+}}" if added else ""
    )
    lead = "…" if p > CONTEXT else ""
    tail = "…" if s > CONTEXT else ""
    shown = f"{lead}{_clip(before, CONTEXT)}{change}{_clip(after, CONTEXT)}{tail}"
    return f"@ line {line}, col {column}: {shown}"


def hunks(old: str, new: str) -> list[str]:
    """The changes from ``old`` to ``new``, at most :data:`MAX_HUNKS` (then how many more)."""
    if old == new:
        return []
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if len(a) > MAX_LINES or len(b) > MAX_LINES:
        return [_hunk(old, new, 1)]
    out: list[str] = []
    blocks = [
        op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    for _, i1, i2, j1, j2 in blocks[:MAX_HUNKS]:
        out.append(_hunk("".join(a[i1:i2]), "".join(b[j1:j2]), i1 + 1))
    if len(blocks) > MAX_HUNKS:
        out.append(f"… and {len(blocks) - MAX_HUNKS} more changed block(s)")
    return out
