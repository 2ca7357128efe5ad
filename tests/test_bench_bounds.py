"""bench/bench_bounds.py at its smallest size: it runs (no figure is asserted), so a change
that breaks it fails here rather than when someone next measures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_bounds.py"


def test_the_input_check_benchmark_runs_at_its_smallest_size():
    run = subprocess.run([sys.executable, str(BENCH), "--rounds", "1", "--rows", "50",
                          "--repeat", "1"], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert "current validated" in run.stdout and "current constructed" in run.stdout
