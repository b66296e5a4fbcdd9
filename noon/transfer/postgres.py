"""A Nocturne Memory database on PostgreSQL (its Docker setup), read with psycopg 3.

The URL is libpq's (``postgresql://user:password@host:port/db``, ``?host=/socket/dir`` for a
unix socket); Nocturne's own form (``postgresql+asyncpg://...``, as in its ``DATABASE_URL``) is
accepted too. The session is read-only, with a connect and a statement timeout, so an import
can neither change the database nor hang on it. Passwords never appear in messages.
"""

from __future__ import annotations

import re
from typing import Any

from noon.transfer.errors import TransferError
from noon.transfer.nocturne import NocturneData, read

URL = re.compile(r"^postgres(?:ql)?(?:\+[a-z0-9_]+)?://", re.IGNORECASE)
CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 120_000
SESSION_OPTIONS = f"-c default_transaction_read_only=on -c statement_timeout={STATEMENT_TIMEOUT_MS}"


def is_url(text: str) -> bool:
    return bool(URL.match(text))


def libpq_url(url: str) -> str:
    """Nocturne's SQLAlchemy URL as libpq reads it (the ``+driver`` part dropped)."""
    return re.sub(r"^postgres(?:ql)?(?:\+[a-z0-9_]+)?://", "postgresql://", url, flags=re.I)


def shown(url: str) -> str:
    """The URL without its password, for messages."""
    masked = re.sub(r"(://[^:/@?#]*):[^@/?#]*@", r"\1:***@", url)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", masked)


class PostgresDatabase:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def tables(self) -> set[str]:
        return {
            r[0]
            for r in self.rows(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = ANY(current_schemas(false))"
            )
        }

    def columns(self, table: str) -> set[str]:
        with self.conn.cursor() as cur:
            cur.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = ANY(current_schemas(false)) AND table_name = %s",
                (table,),
            )
            return {r[0] for r in cur.fetchall()}

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())


def read_postgres(url: str, default_namespace: str) -> NocturneData:
    import psycopg  # here: only PostgreSQL imports need the driver loaded

    source = shown(url)
    try:
        conn = psycopg.connect(
            libpq_url(url),
            connect_timeout=CONNECT_TIMEOUT_S,
            options=SESSION_OPTIONS,
        )
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TransferError(f"{source}: cannot connect: {reason}") from None
    try:
        with conn:
            return read(PostgresDatabase(conn), source, default_namespace)
    except psycopg.Error as exc:
        raise TransferError(f"{source}: not a readable Nocturne database: {exc}") from None
    finally:
        conn.close()
