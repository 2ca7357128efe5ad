"""The screen benchmark still runs: its smallest size, as a subprocess, against the test
server (seconds; no figure is asserted - bench/bench_screen.py reports, never asserts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

BENCH = Path(__file__).parents[1] / "bench" / "bench_screen.py"


def test_bench_screen_smallest_size(migrated, tmp_path):
    env = {**os.environ, "GRAPHMEM_NEO4J_URI": migrated.uri}
    if migrated.auth:
        env |= {"GRAPHMEM_NEO4J_USER": migrated.auth[0], "GRAPHMEM_NEO4J_PASSWORD": migrated.auth[1]}
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(BENCH), "--companies", "2", "--years", "3", "--reads", "1",
                          "--tenant", f"bench-smoke-{uuid.uuid4().hex[:8]}", "--drop", "--json", str(out)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    assert [r["variant"] for r in results] == ["quarter", "instant", "year"]
    assert "screen p50/p95 ms" in run.stdout and "load average" in run.stdout
