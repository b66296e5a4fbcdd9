"""How the commands that read memories (``log``, ``history``, ``query``, ``reindex``) open the
store: one way, refusing a missing directory with the same words; the store is closed on the way
out. Their refusals are raised (kinds of :mod:`noon.errors`) and printed on stderr by
:func:`noon.cli.main`, never on stdout, which holds only what was asked for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from noon.config import Settings
from noon.errors import NotFound
from noon.store.store import Store


@contextmanager
def open_store(settings: Settings, fold_now: bool = True) -> Iterator[Store]:
    if not settings.dir.is_dir():
        raise NotFound(f"{settings.dir} does not exist; set NOON_DIR")
    store = Store(settings, fold_now=fold_now)
    try:
        yield store
    finally:
        store.close()
