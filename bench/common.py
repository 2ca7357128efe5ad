"""What the benchmark scripts share: a timestamped log line, percentiles, peak memory."""

from __future__ import annotations

import resource
import sys
import time


def log(msg: str) -> None:
    """Progress on stderr, so stdout stays the result table or JSON."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def peak_rss_mb() -> float:
    """This process's peak resident memory (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
