"""``noond`` that stops itself (SIGSTOP) in its first relay compaction, after the merged segment
is written and before any segment it replaces is removed, so a test can SIGKILL it exactly
there: a machine lost in the middle of a compaction. Only compaction removes relay objects, so
the first removal is that moment.

``python -m tests.harness.noond_stop_in_compaction [noond flags...]``
"""

from __future__ import annotations

import functools
import os
import signal
import sys
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
        os.kill(os.getpid(), signal.SIGSTOP)  # the test kills it here; it never resumes
        delete(self, name)

    return stop_then_delete


def main() -> int:
    Folder.delete = stop_first(Folder.delete)  # type: ignore[method-assign,assignment]
    Bucket.delete = stop_first(Bucket.delete)  # type: ignore[method-assign,assignment]
    return noond.__main__.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
