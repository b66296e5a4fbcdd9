"""The root of every error noon raises on purpose.

Callers that want "anything noon refused or could not do" catch :class:`NoonError`; each module
derives its own errors from it (or from a standard class as well, where callers already expect
one: a ``ValueError`` for bad input). Messages say what is wrong and what to do.
"""

from __future__ import annotations


class NoonError(Exception):
    """Something noon refused or could not do. The message says what and, where a person can
    act, what to do."""
