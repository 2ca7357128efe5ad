"""The screen benchmark still runs: its smallest size, as a subprocess, against the test
server (seconds; no figure is asserted - bench/bench_screen.py reports, never asserts)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from procs import env

BENCH = Path(__file__).parents[1] / "bench" / "bench_screen.py"


def test_bench_screen_smallest_size(migrated, tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(BENCH), "--companies", "2", "--years", "3", "--reads", "1",
                          "--tenant", f"bench-smoke-{uuid.uuid4().hex[:8]}", "--drop", "--json", str(out)],
                         env=env(migrated), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    assert [r["variant"] for r in results] == ["quarter", "instant", "year"]
    assert "screen p50/p95 ms" in run.stdout and "load average" in run.stdout
