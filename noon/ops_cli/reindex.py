"""``noon reindex``: throw this machine's read model away and fold every shard into a new one.

Never needed for correctness (the read model follows the shards by itself, and a damaged one is
rebuilt), but it is the explicit way to start over: after restoring ``NOON_DIR`` from a backup
(the model also forgets the highest seqs it saw), or to measure a cold fold.
"""

from __future__ import annotations

import argparse
import sys
import time

from tqdm import tqdm

from noon.config import add_store_flags, settings_from
from noon.store.store import Store


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Rebuild this machine's read model (NOON_DIR/.noon/readmodel.sqlite3) from the shards, "
        "with a progress bar. Sessions running meanwhile keep their own copy until they restart."
    )
    add_store_flags(parser, namespace=False)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not settings.dir.is_dir():
        print(f"noon: {settings.dir} does not exist; set NOON_DIR")
        return 1
    started = time.monotonic()
    store = Store(settings, fold_now=False)
    try:
        with tqdm(
            total=0, unit="B", unit_scale=True, desc="folding", file=sys.stderr, disable=args.quiet
        ) as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.n = done
                bar.refresh()

            store.model.on_progress = progress
            store.rebuild()
        held = store.fold.applied
    finally:
        store.close()
    seconds = time.monotonic() - started
    rate = f", {held / seconds:,.0f} ops/s" if seconds > 0 else ""
    print(f"read model rebuilt: {held:,} ops folded in {seconds:.1f} s{rate}")
    return 0
