"""``noond`` that stops itself (SIGSTOP) in its first relay compaction, after the merged segment
is written and before any segment it replaces is removed, so a test can SIGKILL it exactly
there: a machine lost in the middle of a compaction. Only compaction removes relay objects, so
the first removal is that moment.

The SIGSTOP is sent to the calling thread, not to the process: a process-directed one may be
taken by another thread, and the caller runs on until the whole group stops. On an idle machine
that was long enough for the delete to reach the bucket (the stop line named a segment already
gone), so the test saw one segment fewer than the moment it means to freeze.

``python -m tests.harness.noond_stop_in_compaction [noond flags...]``
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

import noond.__main__
from noond.relay.bucket import Bucket
from noond.relay.folder import Folder

Backend = TypeVar("Backend", Folder, Bucket)


def stop_first(delete: Callable[[Backend, str], None]) -> Callable[[Backend, str], None]:
    @functools.wraps(delete)
    def stop_then_delete(self: Backend, name: str) -> None:
        print(f"stopping before removing {name}", file=sys.stderr, flush=True)
        # The test kills it here; it never resumes. Directed at this thread, the stop takes
        # effect before pthread_kill returns (see the module's docstring).
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
        delete(self, name)

    return stop_then_delete


def main() -> int:
    Folder.delete = stop_first(Folder.delete)  # type: ignore[method-assign,assignment]
    Bucket.delete = stop_first(Bucket.delete)  # type: ignore[method-assign,assignment]
    return noond.__main__.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
