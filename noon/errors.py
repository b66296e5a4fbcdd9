"""The root of every error noon raises on purpose, and the kinds of refusal each edge maps to its
own form once.

Callers that want "anything noon refused or could not do" catch :class:`NoonError`: every error
class of noon and noond derives from it (``tests/test_error_kinds.py`` holds it), keeping a
standard base where callers expect one (``OSError`` for a relay that is down). A refusal of
a use case (:mod:`noon.app`) is one of six kinds, and every error class a use case may raise
derives from exactly one of them (a standard class as well where callers already expect one: a
``ValueError`` for bad input). Each edge maps a kind to its form in one place:

======================  ==================================  =====================
kind                    MCP tool call                       HTTP (JSON ``error``)
======================  ==================================  =====================
:class:`NotFound`       ``isError``, ``Error: `` + message  404
:class:`Conflict`       ``isError``, ``Error: `` + message  409 (+ ``current``)
:class:`Invalid`        ``isError``, ``Error: `` + message  400
:class:`Refused`        ``isError``, ``Error: `` + message  400
:class:`Limit`          ``isError``, ``Error: `` + message  400
:class:`Unavailable`    ``isError``, message (logged)       503
======================  ==================================  =====================

(:data:`noon.mcp.uri_base.REFUSALS`, :func:`noon.web.app.refusal`; a command prints every
kind on stderr as ``noon: message`` and exits 1, :func:`noon.cli.main`. Nothing is written when a
use case refuses.) Messages say what is wrong and what to do.
"""

from __future__ import annotations

from typing import Any


class NoonError(Exception):
    """Something noon refused or could not do. The message says what and, where a person can
    act, what to do."""


class NotFound(NoonError):
    """What the call names (a memory by its id, a version, a change, the memory directory) is
    not held here."""


class Conflict(NoonError):
    """What the caller saw changed meanwhile (a stale version, basis or heads); ``current``
    says what is current, for a caller that shows it."""

    def __init__(self, message: str, current: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.current: dict[str, Any] = current or {}


class Invalid(NoonError, ValueError):
    """Arguments or an edit that make no sense (a bad URI, a quote that matches nothing, an edit
    that changes nothing)."""


class Refused(NoonError):
    """A well-formed request the rules refuse (a replica's ops that are unproven or skip ops
    compacted away: :class:`noon.store.receive.ReplicaError`)."""


class Limit(NoonError):
    """A call over a bound (too many changes at once, too large a rollback)."""


class Unavailable(NoonError):
    """The store cannot serve the call now (a full disk, a forked or behind shard): a person
    must act; the message says how."""


KINDS: tuple[type[NoonError], ...] = (NotFound, Conflict, Invalid, Refused, Limit, Unavailable)
"""Every refusal kind, in the order an edge tests them (a class deriving from two kinds maps as
the first)."""
REFUSALS: tuple[type[NoonError], ...] = (NotFound, Conflict, Invalid, Refused, Limit)
"""The kinds that refuse a call outright (nothing written, nothing to repair); :class:`Unavailable`
is the store's trouble, logged as well."""
