"""bench/bench_bootstrap.py runs, and what it reports adds up (a smoke run: no figure is judged)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("short_lived_jvms")  # tests/conftest.py


@pytest.mark.timeout(900)
def test_the_bootstrap_benchmark_runs_at_its_smallest_size(migrated, tmp_path):
    """Two companies of 2 filings x 5 concepts: the online sample before and after, one
    bootstrap (on launchers of its own; the search-text probe and the online sample on
    the session's server, the sample in tenants of its own: three launchers fewer)."""
    out = tmp_path / "bench.json"
    probe = (["--probe-uri", migrated.uri, "--online-uri", migrated.uri]
             if migrated.auth is None else [])  # the script takes no password
    done = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "bench" / "bench_bootstrap.py"),
                           "--sizes", "40", "--filings", "2", "--concepts", "5", "--online-companies", "1",
                           "--archive-rows", "1000", "--workers", "2", *probe, "--dir", str(tmp_path / "bench"),
                           "--json", str(out)],
                          capture_output=True, text=True, timeout=840, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    booted, online = result["cases"]["bootstrap-40-w2"], result["cases"]["online-before"]
    totals = booted["report"]["totals"]
    assert booted["rows"] > online["rows"] > 0 and totals["created"] > 0 and totals["keys"] > 0
    assert result["cases"]["online-after"]["rows"] == online["rows"]
    assert booted["report"]["peak_rss_mb"]["importer"] > 0 and result["projection"]["archive_rows"] == 1000
