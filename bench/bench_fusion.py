#!/usr/bin/env python3
"""How hybrid search fuses text and meaning, chosen by measurement on LoCoMo (it reports,
never asserts).

Loads LoCoMo conversations (``graphmem eval locomo``'s loader: one namespace each, in a
throwaway tenant removed afterwards) once, then asks every question of categories 1-4
on the text rung, the semantic rung, hybrid with the weighted sum of min-max-normalised
scores at several text weights, and hybrid with reciprocal-rank fusion (k=60), and
prints recall@5/@10 and MRR per category for each. graphmem/retrieval/rank.py's
TEXT_WEIGHT is the weight this picks.

Usage (the data is not in the repository; LoCoMo's terms are its authors')::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7687 .venv/bin/python bench/bench_fusion.py \\
        PATH/TO/locomo [--embedder wordllama] [--weights 0.3,0.5,0.7] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import log  # noqa: E402

from graphmem import Memory  # noqa: E402
from graphmem.eval import locomo, score, throwaway  # noqa: E402
from graphmem.retrieval import from_spec, rank  # noqa: E402


def rrf(text: list[str], semantic: list[str], limit: int = 10, k: int = 60) -> list[str]:
    """Reciprocal-rank fusion (k = 60) of the text and semantic rungs' orders over the same
    legal candidates - measured against the weighted sum here, not offered by the product."""
    fused: dict[str, float] = {}
    for order in (text, semantic):
        for r, i in enumerate(order, 1):
            fused[i] = fused.get(i, 0.0) + 1 / (k + r)
    return sorted(fused, key=lambda i: -fused[i])[:limit]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--weights", default="0.3,0.5,0.7")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    embedder = from_spec(args.embedder)
    weights = [float(w) for w in args.weights.split(",")]
    variants: dict[str, tuple[str, Any]] = {"text": ("text", None), "semantic": ("semantic", None),
                                            **{f"hybrid w={w:g}": ("hybrid", w) for w in weights},
                                            "hybrid rrf": ("hybrid", "rrf")}
    tallies = {v: score.Tally() for v in variants}
    loaded: dict[str, Any] = {"questions": 0}
    with Memory.connect(os.environ["GRAPHMEM_NEO4J_URI"]) as memory:
        memory.migrate()
        with throwaway(memory, "fusion") as tenant:
            store = locomo.store_for(memory, tenant, embedder)
            for ns, qs in locomo.load(store, args.path, loaded):
                log(f"{ns}: {len(qs)} questions")
                scope = store.scope_of(ns)
                for question, evidence, category in qs:
                    loaded["questions"] += 1
                    for name, (mode, how) in variants.items():
                        if how == "rrf":
                            (text, ms1, _), (sem, ms2, emb) = (
                                locomo.ask(memory, scope, store, ns, question, m, 50) for m in ("text", "semantic"))
                            ranked, ms = rrf(text, sem), ms1 + ms2
                        else:
                            if how is not None:
                                rank.TEXT_WEIGHT = how
                            ranked, ms, emb = locomo.ask(memory, scope, store, ns, question, mode, 10)
                        tallies[name].add([category], ranked, evidence, ms=ms, embedding_ms=emb)
    report = {"embedder": embedder.name, "loaded": loaded, "rungs": {v: t.summary() for v, t in tallies.items()}}
    print(json.dumps(loaded))
    print(score.table(report["rungs"]))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
