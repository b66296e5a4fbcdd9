"""What every listener of noon shares (``noond``, ``noon serve --http``, ``noon web``): what
counts as a loopback host (Host and Origin headers naming anything else are refused there),
and the count of open connections that admits a new one or says why not."""

from __future__ import annotations

import ipaddress
import resource
from dataclasses import dataclass, field

DESCRIPTOR_RESERVE = 64
"""Descriptors kept free for the store's files and the process itself."""


def is_loopback(host: str) -> bool:
    """``localhost`` (or a name under ``.localhost``) or any loopback IP: all of 127.0.0.0/8,
    and ``::1`` in any spelling, with or without brackets."""
    host = host.strip().strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def connection_cap(wanted: int) -> int:
    """``wanted``, or fewer if the open-files limit would not hold them beside
    :data:`DESCRIPTOR_RESERVE`."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - DESCRIPTOR_RESERVE))


@dataclass
class ConnectionCounter:
    """Connections open in all and per source address; ``total_setting`` and
    ``per_source_setting`` name the settings that raise the caps, for the refusal's reason."""

    total_cap: int
    per_source_cap: int
    total_setting: str
    per_source_setting: str
    by_source: dict[str, int] = field(default_factory=dict)
    total: int = 0

    def admit(self, source: str) -> str | None:
        """Count a new connection; or the reason it is refused (then nothing is counted)."""
        if self.total >= self.total_cap:
            return f"as many connections open as allowed ({self.total_setting})"
        held = self.by_source.get(source, 0)
        if held >= self.per_source_cap:
            return f"as many connections open from it as allowed ({self.per_source_setting})"
        self.by_source[source] = held + 1
        self.total += 1
        return None

    def release(self, source: str) -> None:
        self.total -= 1
        left = self.by_source[source] - 1
        if left:
            self.by_source[source] = left
        else:
            del self.by_source[source]
