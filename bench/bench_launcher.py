"""Launcher figures: first (cold) Maven build, later start and stop times, idle resident memory.

Usage: python bench/bench_launcher.py [--cold] [--starts 5]
--cold builds into a fresh Maven repository (as on a new machine; downloads Neo4j's
jars from Maven Central) and a fresh target/ folder. Prints median and p95.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from graphmem import server as srv


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cold_build() -> float:
    """Seconds for `mvn package` with an empty local repository, in a copy of the
    launcher project (the live target/ may be in use by running servers)."""
    with tempfile.TemporaryDirectory() as repo, tempfile.TemporaryDirectory() as work:
        source = Path(work) / "launcher"
        shutil.copytree(srv.launcher_dir(), source, ignore=shutil.ignore_patterns("target"))
        began = time.perf_counter()
        subprocess.run(["mvn", "-B", "-q", f"-Dmaven.repo.local={repo}", "package"],
                       cwd=source, check=True)
        return time.perf_counter() - began


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--pagecache", default="512m")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds after a start before its resident memory is read")
    args = parser.parse_args()
    if args.cold:
        print(f"cold build (empty Maven repository): {cold_build():.1f} s")
    began = time.perf_counter()
    srv.build()
    print(f"cached build check: {time.perf_counter() - began:.3f} s")
    starts, stops, rss = [], [], []
    with tempfile.TemporaryDirectory() as home:
        cfg = srv.ServerConfig(home=Path(home), port=_free_port(), heap=args.heap,
                               pagecache=args.pagecache)
        for _ in range(args.starts):
            began = time.perf_counter()
            status = srv.start(cfg)
            starts.append(time.perf_counter() - began)
            time.sleep(args.settle)
            rss.append(rss_mib(status.pid))
            began = time.perf_counter()
            srv.stop(cfg)
            stops.append(time.perf_counter() - began)
    print(f"start until Bolt answers: median {statistics.median(starts):.1f} s, p95 {_p95(starts):.1f} s "
          f"(n={len(starts)}, heap {args.heap}, page cache {args.pagecache})")
    print(f"stop until the process is gone: median {statistics.median(stops):.1f} s, p95 {_p95(stops):.1f} s")
    print(f"idle resident memory {args.settle:g} s after start: median {statistics.median(rss):.0f} MiB")


if __name__ == "__main__":
    main()
