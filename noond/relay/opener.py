"""The backend a ``NOOND_RELAY`` URL names: a synced folder (``file:///path``) or an
S3-compatible bucket (``s3://bucket/prefix``). Each is imported only when named, so a node
without a bucket never loads the S3 client."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from noon.config import ConfigError
from noond.relay.backend import Backend


def open_backend(url: str, *, timeout: float = 10.0) -> Backend:
    """A backend for ``file:///path`` or ``s3://bucket/prefix?region=R&endpoint=E&path_style=1``."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        from noond.relay.folder import Folder

        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ConfigError(f"NOOND_RELAY: {url!r} is not file:///absolute/path")
        return Folder(url, parts.path)
    if parts.scheme == "s3":
        from noond.relay.bucket import Bucket

        if not parts.netloc:
            raise ConfigError(f"NOOND_RELAY: {url!r} names no bucket (s3://bucket/prefix)")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(query) - {"region", "endpoint", "path_style"}
        if unknown:
            raise ConfigError(f"NOOND_RELAY: {url!r}: unknown parameter {sorted(unknown)[0]!r}")
        return Bucket(
            url,
            parts.netloc,
            parts.path.strip("/"),
            region=query.get("region"),
            endpoint=query.get("endpoint"),
            path_style=query.get("path_style", "") in ("1", "true", "yes"),
            timeout=timeout,
        )
    raise ConfigError(f"NOOND_RELAY: {url!r} is neither s3://bucket/prefix nor file:///path")
