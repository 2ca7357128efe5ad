"""bench/bench_edgar.py runs, and what it reports adds up (a smoke run: no figure is judged)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from procs import env  # noqa: E402 - test helpers beside this file


def test_the_edgar_benchmark_runs_at_its_smallest_size(migrated, tmp_path):
    """bench/bench_edgar.py end to end on two companies (a smoke run: no figure is judged)."""
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "bench" / "bench_edgar.py"),
                           "--companies", "2", "--filings", "2", "--concepts", "4", "--raw-every", "1",
                           "--json", str(out)], env=env(migrated),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    load = result["cases"]["load-2"]
    assert load["load"]["totals"]["companies"] == {"loaded": 2}
    assert load["rerun"]["totals"]["companies"] == {"recorded": 2}
    assert result["cases"]["raw"]["rows"] == load["load"]["totals"]["assertions"]
