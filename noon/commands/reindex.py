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

from noon.commands.opening import open_store
from noon.config import add_store_flags, settings_from
from noon.store.readmodel.embedder import ModelUnavailable
from noon.store.store import Store


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Rebuild this machine's read model (NOON_DIR/.noon/readmodel.sqlite3) from the shards, "
        "with a progress bar, and embed every memory again where semantic search is installed. "
        "Sessions running meanwhile keep their own copy until they restart."
    )
    add_store_flags(parser, namespace=False)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    started = time.monotonic()
    with open_store(settings, fold_now=False) as store:
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
        seconds = time.monotonic() - started
        try:
            embedded, embedding_s = _embed(store, args.quiet)
        except ModelUnavailable as exc:
            embedded, embedding_s, failed = 0, 0.0, str(exc)
        else:
            failed = ""
    rate = f", {held / seconds:,.0f} ops/s" if seconds > 0 else ""
    print(f"read model rebuilt: {held:,} ops folded in {seconds:.1f} s{rate}")
    if failed:
        print(
            f"semantic index not rebuilt: the model did not load ({failed}); "
            "search ranks by words only until it does",
            file=sys.stderr,
        )
        return 1
    if store.vectorizer.enabled:
        per_s = f", {embedded / embedding_s:,.1f} vectors/s" if embedding_s > 0 else ""
        print(
            f"semantic index rebuilt: {embedded:,} memories embedded in {embedding_s:.1f} s{per_s}"
        )
    return 0


def _embed(store: Store, quiet: bool) -> tuple[int, float]:
    """Every live memory embedded again (the ``semantic`` extra; else nothing): (how many,
    seconds)."""
    if not store.vectorizer.enabled:
        return 0, 0.0
    started = time.monotonic()
    with tqdm(total=0, unit=" memories", desc="embedding", file=sys.stderr, disable=quiet) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        embedded = store.vectorizer.catch_up(progress)
    return embedded, time.monotonic() - started
