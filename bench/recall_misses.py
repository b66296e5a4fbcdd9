"""The questions ``search_memory`` misses on LoCoMo, one by one, to read and sort by cause.

    python -m bench.recall_misses [--data DIR] [--conversations 0-2] [--k 5] [--out FILE]

For each question of categories 1-4 whose evidence turns are none of the first ``k`` hybrid
results (lexical where the ``semantic`` extra is absent): the question, its category, its
evidence turns' texts, what came first instead, and signs of why, computed not guessed:
``no-shared-word`` (no evidence turn holds any of the query's words, stemmed), ``name-only``
(what the evidence shares with the query is only the speakers' names), ``rank`` (the best
evidence turn's place in the first 100), ``turns`` (how many evidence turns). The counts of each
sign close the report; the reading of the misses is in docs/recall.md.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench.recall import CATEGORIES, DATA, Conversation, load, noon_store
from noon.graph.search import query_terms, tokens

DEPTH = 100


def _stem(word: str) -> str:
    """A crude English stem, only to tell whether two texts share a word (not noon's index)."""
    for end in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(end) and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


def signs(conv: Conversation, question: str, evidence: frozenset[str]) -> dict[str, Any]:
    speakers = {t.split(":", 1)[0].casefold() for t in conv.memories.values() if ":" in t}
    asked = {_stem(w) for w in query_terms(question)}
    shared: set[str] = set()
    for key in evidence:
        shared |= asked & {_stem(w) for w in tokens(conv.memories.get(key, ""))}
    return {
        "no-shared-word": not shared,
        "name-only": bool(shared) and shared <= speakers,
        "turns": len(evidence),
    }


def misses(data: Path, which: range, k: int) -> list[dict[str, Any]]:
    conversations = load(data, "turns", which)
    out = []
    with noon_store(conversations) as noon:
        rank = noon.hybrid or noon.lexical
        for conv in conversations:
            for question, category, evidence in conv.questions:
                found = [conv.evidence_of[key] for key in rank(conv.name, question, DEPTH)]
                if evidence.intersection(found[:k]):
                    continue
                places = [found.index(e) + 1 for e in evidence if e in found]
                out.append(
                    {
                        "conversation": conv.name,
                        "question": question,
                        "category": CATEGORIES[category],
                        "evidence": {e: conv.memories.get(e, "?") for e in sorted(evidence)},
                        "instead": [conv.memories[key] for key in found[:3]],
                        "rank": min(places) if places else None,
                    }
                    | signs(conv, question, evidence)
                )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--conversations", default="0-2")
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args(argv)
    if not (args.data / "locomo-dev.json").is_file():
        print(f"skipped: no LoCoMo data at {args.data} (see --data)", file=sys.stderr)
        return 0
    lo, _, hi = args.conversations.partition("-")
    found = misses(args.data, range(int(lo), int(hi or lo) + 1), args.k)
    tally: Counter[str] = Counter()
    for m in found:
        print(f"\n[{m['category']}] {m['question']}  (best evidence at {m['rank']})")
        for key, text in m["evidence"].items():
            print(f"   evidence {key}: {text[:160]}")
        for text in m["instead"]:
            print(f"   instead: {text[:120]}")
        tally.update(
            [m["category"]]
            + [s for s in ("no-shared-word", "name-only") if m[s]]
            + [
                "beyond-100"
                if m["rank"] is None
                else f"rank-{'6-10' if m['rank'] <= 10 else '11-100'}"
            ]
        )
    print(
        f"\n{len(found)} misses at @{args.k}: "
        + ", ".join(f"{k} {v}" for k, v in tally.most_common())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
