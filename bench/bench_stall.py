#!/usr/bin/env python3
"""How long a writer waits behind a stalled one (a benchmark, not a test: it reports, never asserts).

Per trial, a writer process takes its tenant's clock lock (a ``Memory.write``, whose
first statement is ``admin.tick``) with write timeout ``--timeout`` and stops itself
(SIGSTOP) inside the transaction; this process then times ``put_entity`` into the same
tenant - it waits until the server rolls the stopped transaction back - and, interleaved
in the same loop, ``put_entity`` into a tenant nobody holds (the baseline). The stopped
process is killed after each trial. Prints median and p95 of both beside the timeout
and the machine's load average.

Usage (against a dedicated server, never a shared one)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7692 .venv/bin/python bench/bench_stall.py \
        [--timeout 60] [--trials 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid

from common import log, pct  # noqa: E402 - sibling module of the bench scripts

from graphmem import Entity, Memory, Scope

# The stalled writer: takes the tenant's lock, says so, and stops inside the transaction.
WRITER = """
import os, signal, sys
from graphmem import Memory, Scope, Timeouts
def stall(tx, at):
    print("holding", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
with Memory.from_env(timeouts=Timeouts(write=float(sys.argv[2]))) as mem:
    mem.write(Scope(tenant=sys.argv[1]), "stalled-writer", stall)
"""


def trial(mem: Memory, timeout: float) -> tuple[float, float]:
    """(seconds the other writer waited behind a stopped one, seconds without one)."""
    stalled, free = (Scope(tenant=f"bench-stall-{uuid.uuid4().hex[:8]}") for _ in range(2))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, stalled.tenant, str(timeout)],
                              stdout=subprocess.PIPE, text=True)
    try:
        if writer.stdout.readline().strip() != "holding":
            sys.exit("the stalled writer did not start")
        began = time.perf_counter()
        mem.put_entity(stalled, Entity(id="other-writer"))
        waited = time.perf_counter() - began
        began = time.perf_counter()
        mem.put_entity(free, Entity(id="other-writer"))
        return waited, time.perf_counter() - began
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=60.0, help="the stalled writer's write timeout (s)")
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args()
    if not os.environ.get("GRAPHMEM_NEO4J_URI"):
        sys.exit("set GRAPHMEM_NEO4J_URI to a dedicated server, e.g. bolt://127.0.0.1:7692")
    waits, bases = [], []
    load_before = os.getloadavg()[0]
    with Memory.from_env() as mem:
        mem.migrate()
        for n in range(args.trials):
            waited, base = trial(mem, args.timeout)
            waits.append(waited)
            bases.append(base)
            log(f"trial {n + 1}: waited {waited:.2f} s behind the stopped writer; {base * 1e3:.0f} ms without")
    print(f"a writer behind one stopped inside its transaction (write timeout {args.timeout:g} s), "
          f"{args.trials} trials: median {pct(waits, 50):.2f} s, p95 {pct(waits, 95):.2f} s")
    print(f"the same write into a tenant nobody holds (baseline, same loop): median "
          f"{pct(bases, 50) * 1e3:.0f} ms, p95 {pct(bases, 95) * 1e3:.0f} ms")
    print(f"(machine: {os.cpu_count()} CPUs, 1-minute load average {load_before:.1f} before / "
          f"{os.getloadavg()[0]:.1f} after)")


if __name__ == "__main__":
    main()
