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


ANSWER_OBJECTS = 50_000
"""Tracked objects (containers) allocated and not yet freed, past which a serving process runs
a young collection (Python's default is 700). The MCP SDK validates and dumps every result into
new dictionaries and lists before it writes it: a read_graph answer of 10k entities holds about
20,000 of them at once, so the default set off some 26 young collections in the middle of each
such answer, which moved those still-live objects to older generations, where middle and full
collections walked them again (2.4 and 0.2 of them a read, besides the kept answer's entries):
about 3.4 ms of CPU a read, a sixth of it. The dump is freed when the answer is written, which
takes its objects off the count, so an answer up to this size sets off nothing. Cyclic garbage
(an exception's traceback, a cancelled task) is found at most this many objects later."""


def sized_for_answers() -> None:
    """Let a serving process build an answer of up to :data:`ANSWER_OBJECTS` containers without
    a collection in its middle (the older generations' thresholds unchanged)."""
    _, middle, full = gc.get_threshold()
    gc.set_threshold(ANSWER_OBJECTS, middle, full)
