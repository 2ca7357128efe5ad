"""bench/bench_archives.py at its smallest size, with its baseline: it runs (no figure is
asserted), so a change that breaks it fails here rather than when someone next measures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_archives.py"


def test_the_archives_benchmark_runs_at_its_smallest_size(tmp_path):
    run = subprocess.run([sys.executable, str(BENCH), "--members", "200", "--companies", "5", "--rounds", "1",
                          "--baseline", "HEAD", "--dir", str(tmp_path)], capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "current" in run.stdout and "baseline" in run.stdout and "load average" in run.stdout, run.stdout
