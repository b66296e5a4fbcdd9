"""Stored or peer text shown on a terminal: every control character is written as a visible
escape, never sent. An agent's client name, a memory's text or an entity's field holding
``ESC [2K`` could otherwise erase a line from the screen, ``ESC ]52`` write the clipboard, a
newline forge a line of output, and a bidirectional override reorder what is read."""

from __future__ import annotations

import re

_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` on one line with every control character (C0, DEL, C1, line and paragraph
    separators, bidirectional marks and overrides) shown as ``\\x1b`` or ``\\u202e``. A
    backslash stays as it is: the escapes are for reading, not for parsing back."""
    return _CONTROL.sub(_escape, text)


def visible_lines(text: str) -> str:
    """``text`` line by line, each :func:`visible`: a report whose lines hold peer or stored
    text (a daemon's error, a member's address) keeps its lines and sends no control."""
    return "\n".join(visible(line) for line in text.split("\n"))
