"""Reading an author's head (PROTOCOL.md §14.2): sealed under its name, every field of its
form, the author's signing certificates checked against the CA and its signature over the
rest verified, or :class:`~noond.relay.seal.Refused` with the reason counted."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from noon.certs import CertError
from noon.core.collection import member_of
from noon.core.ops import valid_node_id
from noond.relay import seal
from noond.signers import MAX_SIGNERS_PER_NODE, Signers


def _well_formed(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("node"), str)
        and valid_node_id(doc["node"])
        and type(doc.get("seq")) is int
        and type(doc.get("at")) is int
        and isinstance(doc.get("certs"), list)
        and all(isinstance(c, str) for c in doc["certs"])
        and isinstance(doc.get("frontier"), dict)
        and all(
            isinstance(n, str) and valid_node_id(n) and type(s) is int and s >= 0
            for n, s in doc["frontier"].items()
        )
    )


def open_head(
    k: seal.Keys,
    name: seal.Name,
    object_name: str,
    body: bytes,
    signers: Signers,
    revoked: set[str],
) -> dict[str, Any]:
    """The head's document, proven; its certificates are kept by ``signers`` on the way."""
    try:
        doc = json.loads(seal.unseal(k, object_name, body, seal.MAX_HEAD))
    except ValueError as exc:
        if isinstance(exc, seal.Refused):
            raise
        raise seal.Refused("format", f"a head that is not JSON: {exc}") from None
    if not _well_formed(doc):
        raise seal.Refused("format", "a head without its fields")
    node = doc["node"]
    if seal.tag(k, node) != name.tag:
        raise seal.Refused("foreign", f"a head of {node!r} under another author's name")
    if member_of(node) in revoked:
        raise seal.Refused("revoked", f"a head of {node!r}, which is revoked")
    if signers.required:
        for pem in doc["certs"][:MAX_SIGNERS_PER_NODE]:
            try:
                signers.add(pem.encode(), member_of(node))
            except CertError as exc:
                raise seal.Refused("uncertified", f"head of {node}: {exc}") from None
        check = signers.check(node)
        sig = doc.pop("sig", None)
        try:
            raw = base64.urlsafe_b64decode(sig + "==") if isinstance(sig, str) else b""
        except (binascii.Error, ValueError):
            raw = b""
        message = seal.HEAD_CONTEXT + seal.canonical(doc)
        if check is None or not check(message, raw):
            raise seal.Refused("unproven", f"the head of {node} is not signed by its author")
    return doc
