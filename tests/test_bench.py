"""Every benchmark script runs: a smallest-size smoke run of each (no figures asserted).

A benchmark that cannot run measures nothing, and one broken by a change elsewhere
(an internal signature it reuses) should fail here, not months later. Each run is a
subprocess against the test server, as a user starts it; only its exit code and that it
printed its report are checked.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from procs import env  # noqa: E402 - test helpers beside this file

pytestmark = pytest.mark.usefixtures("short_lived_jvms")  # tests/conftest.py

BENCH = Path(__file__).resolve().parents[1] / "bench"

# script -> (smallest arguments, a line its report prints)
SMOKE = {
    "bench_agents.py": (["--entities", "2", "--namespaces", "2", "--items", "3", "--calls", "3"],
                        "get: GraphmemStore"),
    "bench_core.py": (["--sizes", "400", "--reads", "10", "--in-process", "--drop"],
                      "Targets (reported, not asserted)"),
    "bench_hotkey.py": (["--sizes", "3,6", "--reads", "2", "--history-reps", "1", "--writes", "2",
                         "--threads", "2", "--rounds", "1"], "hot key / fresh keys rate"),
    "bench_lineage.py": (["--sizes", "300", "--runs", "1", "--budget", "1", "--derive-first", "5",
                          "--max-derive-seconds", "0", "--verify-clusters", "1"],
                         "retract_source"),
    "bench_loaders.py": (["--sizes", "1000", "--no-tesla", "--concepts", "20", "--drop"],
                         "Loader throughput and memory"),
    "bench_search.py": (["--memories", "400", "--queries", "3"], "build_context, 200 candidates"),
    "bench_retrieval.py": (["--memories", "120", "--queries", "1"], "Targets (reported, not asserted)"),
    "bench_fusion.py": ([str(Path(__file__).parent / "fixtures" / "locomo_tiny.json"), "--embedder", "toy",
                         "--weights", "0.5"], "hybrid rrf"),
    "bench_stall.py": (["--timeout", "2", "--trials", "1"], "a writer behind one stopped"),
    "bench_launcher.py": (["--starts", "1", "--heap", "512m", "--pagecache", "64m", "--settle", "1"],
                          "start until Bolt answers"),
    "bench_screen_table.py": (["--rows", "50", "--repeat", "1", "--baseline-repeat", "0"], "csv, every row"),
}

# scripts with no smoke run, and why
NO_SMOKE = {
    # restarts its own server for each mode and waits for the warmer: 9 minutes for one
    # round on this machine, not a smoke run; run it by hand (docs/PERFORMANCE.md)
    "bench_coldstart.py",
}


def test_every_benchmark_script_has_a_smoke_run():
    """Here, or in a test module of its own (tests/test_bench_screen.py checks more)."""
    own = {p.name.removeprefix("test_") for p in Path(__file__).parent.glob("test_bench_*.py")}
    assert sorted(p.name for p in BENCH.glob("bench_*.py")) == sorted(set(SMOKE) | own | NO_SMOKE)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_benchmark_runs_at_its_smallest_size(script, migrated, tmp_path):
    if script == "bench_launcher.py" and not (shutil.which("mvn") and shutil.which("java")):
        pytest.skip("needs Maven and Java")
    args, report = SMOKE[script]
    done = subprocess.run([sys.executable, str(BENCH / script), *args], env=env(migrated),
                          cwd=tmp_path, capture_output=True, text=True, timeout=560, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert report in done.stdout + done.stderr, done.stdout[-3000:]  # bench_search: on stderr
