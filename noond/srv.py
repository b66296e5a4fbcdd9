"""Discovery by DNS (``NOOND_DNS_SRV``): the ``_noond._tcp`` SRV records of a domain. A module
of its own, imported only when DNS is asked, because dnspython is slow to import and most
nodes never ask it."""

from __future__ import annotations

import logging

import dns.asyncresolver
import dns.exception
import dns.rdatatype

from noond.config import address_of, split_address

log = logging.getLogger("noond.discovery")


async def dns_srv(domain: str, nameserver: str = "") -> list[tuple[str, None]]:
    """``_noond._tcp.<domain>`` SRV records; targets resolved to addresses (A, then AAAA)
    through the same resolver, so a private zone served by one nameserver works."""
    resolver = dns.asyncresolver.Resolver(configure=not nameserver)
    if nameserver:
        host, port = split_address(nameserver)
        resolver.nameservers = [host]
        resolver.port = port
    resolver.lifetime = 5.0
    name = f"_noond._tcp.{domain.strip('.')}."
    answer = await resolver.resolve(name, "SRV")
    out: list[tuple[str, None]] = []
    for rr in sorted(answer, key=lambda r: (r.priority, -r.weight)):
        target = rr.target.to_text().rstrip(".")
        host = target
        for rdtype in ("A", "AAAA"):
            try:
                addrs = await resolver.resolve(target + ".", rdtype)
            except dns.exception.DNSException:
                continue
            host = addrs[0].to_text()
            break
        try:
            out.append((address_of(host, int(rr.port)), None))
        except ValueError:
            log.warning("SRV %s: unusable target %r port %s", name, target, rr.port)
    return out
