"""The ui benchmark still runs: a tiny key, as a subprocess, against the test server
(seconds; no figure is asserted - bench/bench_ui.py reports, never asserts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "bench" / "bench_ui.py"


def test_bench_ui_smallest_size(migrated, tmp_path):
    pytest.importorskip("starlette")
    env = {**os.environ, "GRAPHMEM_NEO4J_URI": migrated.uri}
    if migrated.auth:
        env |= {"GRAPHMEM_NEO4J_USER": migrated.auth[0], "GRAPHMEM_NEO4J_PASSWORD": migrated.auth[1]}
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(BENCH), "--versions", "30", "--reads", "2", "--no-browser",
                          "--tenant", f"bench-smoke-{uuid.uuid4().hex[:8]}", "--drop", "--json", str(out)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["versions"] == 30 and set(summary["results"]) == {"history", "index", "as_of", "page"}
    assert "GET /key (server-side)" in run.stdout and "load average" in run.stdout
