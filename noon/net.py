"""What counts as a loopback host, for every listener and dialler of noon (``noond``,
``noon serve --http``, ``noon web``): a bind there needs no token, and Host and Origin headers
naming anything else are refused."""

from __future__ import annotations

import ipaddress


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
