"""Retrieval measures shared by ``graphmem eval retrieval`` and ``graphmem eval locomo``:
recall@k, MRR, forbidden hits and latency, per rung (text, semantic, hybrid) and group."""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

KS = (5, 10)


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (nearest rank: the ceil(p/100 x n)-th smallest) of values; 0
    for none. Not round(x + 0.5), which rounds half to even and so takes one rank too
    many whenever p/100 x n is a whole odd number (the median of two was the larger)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p * len(ordered) / 100) - 1))]


@dataclass
class Tally:
    """One rung's answers to a query set: per query, recall at each k, reciprocal rank and
    forbidden hits, grouped (LoCoMo's categories; "all" for every query)."""

    recall: dict[str, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: {k: [] for k in KS}))
    rr: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    forbidden: int = 0
    latency_ms: list[float] = field(default_factory=list)
    embedding_ms: list[float] = field(default_factory=list)

    def add(self, groups: Iterable[str], ranked: Sequence[str | Collection[str]], relevant: set[str],
            forbidden: int = 0, ms: float = 0.0, embedding_ms: float | None = None) -> None:
        """One query: its hits best first (each an id, or every id the hit stands for: a
        conflict's hit shows all its candidates, so it retrieves each of them), its
        relevant ids, how many forbidden ids it returned, its latency and query-embedding
        time. A query without relevant ids (one that only forbids) has no recall or rank
        to score: it counts for forbidden hits and latency, and is left out of recall and
        MRR rather than scored 0."""
        self.latency_ms.append(ms)
        if embedding_ms is not None:
            self.embedding_ms.append(embedding_ms)
        self.forbidden += forbidden
        if not relevant:
            return
        hits = [{r} if isinstance(r, str) else set(r) for r in ranked]
        first = next((i for i, ids in enumerate(hits, 1) if ids & relevant), None)
        for g in ("all", *groups):
            for k in KS:
                self.recall[g][k].append(len(relevant & set().union(*hits[:k])) / len(relevant))
            self.rr[g].append(1 / first if first else 0.0)

    def summary(self) -> dict[str, Any]:
        return {
            "groups": {g: {"queries": len(self.rr[g]), **{f"recall@{k}": round(statistics.fmean(v[k]), 4)
                                                          for k in KS},
                           "mrr": round(statistics.fmean(self.rr[g]), 4)}
                       for g, v in sorted(self.recall.items())},
            "forbidden_hits": self.forbidden,
            "latency_ms": {"p50": round(percentile(self.latency_ms, 50), 2),
                           "p95": round(percentile(self.latency_ms, 95), 2)},
            "embedding_ms": ({"p50": round(percentile(self.embedding_ms, 50), 2),
                              "p95": round(percentile(self.embedding_ms, 95), 2)}
                             if self.embedding_ms else None),
        }


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``fn(*args, **kwargs)`` and its wall time in milliseconds."""
    started = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - started) * 1000


def table(results: dict[str, dict[str, Any]]) -> str:
    """Rungs side by side: recall@5/@10 and MRR per group (its question count beside its
    name: every rung asks the same), then forbidden hits, latency and, for the rungs that
    embed the query, its embedding time."""
    rungs = list(results)
    groups = sorted({g for r in results.values() for g in r["groups"]}, key=lambda g: (g != "all", g))
    width = 24  # a rung's column: three values of 8 characters
    lines = [f"{'group':20}" + "".join(f"{r:>{width}}" for r in rungs),
             f"{'':20}" + f"{'R@5':>8}{'R@10':>8}{'MRR':>8}" * len(rungs)]
    for g in groups:
        found = [results[r]["groups"].get(g) for r in rungs]
        n = max(s["queries"] for s in found if s)
        lines.append(f"{f'{g} (n={n})':20}" + "".join(
            f"{s['recall@5']:>8.3f}{s['recall@10']:>8.3f}{s['mrr']:>8.3f}" if s else f"{'-':>{width}}"
            for s in found))
    lines.append(f"{'forbidden':20}" + "".join(f"{results[r]['forbidden_hits']:>{width}}" for r in rungs))
    lines.append(f"{'p50/p95 ms':20}" + "".join(
        f"{results[r]['latency_ms']['p50']:>{width - 9}.1f}/{results[r]['latency_ms']['p95']:<8.1f}" for r in rungs))
    embedding = [results[r].get("embedding_ms") for r in rungs]  # the query's embedding (None: text)
    if any(embedding):
        lines.append(f"{'embedding p50/p95 ms':20}" + "".join(
            f"{e['p50']:>{width - 9}.1f}/{e['p95']:<8.1f}" if e else f"{'-':>{width - 9}}{'':9}" for e in embedding))
    return "\n".join(lines)
