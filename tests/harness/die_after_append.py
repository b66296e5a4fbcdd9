"""``noon serve`` that dies by SIGKILL right after its Nth append to a shard is durable (written
and fsync'd), before it can answer: a machine lost between the write and the answer.

``python -m tests.harness.die_after_append N serve ARGS...``
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

from noon import cli
from noon.store import store


def main() -> int:
    die_at, args = int(sys.argv[1]), sys.argv[2:]
    append = store.append_all
    appended = 0

    def append_then_die(
        fd: int, data: bytes, *, fsync: bool, meanwhile: Callable[[], None] | None = None
    ) -> None:
        nonlocal appended
        append(fd, data, fsync=fsync, meanwhile=meanwhile)
        appended += 1
        if appended >= die_at:
            os.kill(os.getpid(), signal.SIGKILL)

    store.append_all = append_then_die
    return cli.main(args)


if __name__ == "__main__":
    sys.exit(main())
