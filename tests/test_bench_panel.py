"""The panel benchmark still runs: its smallest size, as a subprocess, against the test
server (seconds; no figure is asserted - bench/bench_panel.py reports, never asserts)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from procs import env

BENCH = Path(__file__).parents[1] / "bench" / "bench_panel.py"


def test_bench_panel_smallest_size(migrated, tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(BENCH), "--companies", "2", "--years", "1", "--reads", "1",
                          "--cutoffs", "4", "--tenant", f"bench-smoke-{uuid.uuid4().hex[:8]}", "--drop",
                          "--json", str(out)], env=env(migrated), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["cells"] == 2 * 4 and result["cutoffs"] == 4
    assert "to_pandas p50/p95 ms" in run.stdout and "load average" in run.stdout
