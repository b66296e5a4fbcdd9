"""Pausing Python's cyclic garbage collector around bulk work.

Decoding or indexing a whole store allocates millions of objects and creates no reference
cycles; the collector would rescan them again and again (it triples a cold fold). Every bulk
path in noon pauses it with :func:`paused`, here in ``noon.core`` so the domain layers can use
it too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside; the collector's previous state is restored after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
