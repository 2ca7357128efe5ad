"""bench/bench_reading.py at its smallest size: it runs (no figure is asserted), so a change
that breaks it fails here rather than when someone next measures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_reading.py"
LPA = Path(__file__).parent / "fixtures" / "companyfacts-CIK0001997711-lpa.json"


def test_the_reading_benchmark_runs_at_its_smallest_size():
    run = subprocess.run([sys.executable, str(BENCH), "--rounds", "1", str(LPA)], capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert "rewrite" in run.stdout and "plain" in run.stdout and "load average" in run.stdout
