"""Who asks for a use case: the namespace it works in, the client's own name for itself, and the
edge it came through (``via``: what the review queue trusts)."""

from __future__ import annotations

import re
from dataclasses import dataclass

NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""What a namespace may be called (one rule for the MCP header, the page and a Nocturne
client's ``NAMESPACE`` variable)."""


@dataclass(frozen=True)
class Actor:
    namespace: str
    client: str
    """The client's claim about itself (MCP ``clientInfo.name``, ``web``): information only."""
    via: str
    """The edge every write is recorded as: ``mcp``, ``web`` or ``cli``, whatever the client
    calls itself."""


WEB = "web"
"""The client name and the edge (``via``) of every write the page makes: changes written through
this edge are never queued for review (a client's name, whatever it is, never counts)."""
