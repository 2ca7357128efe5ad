"""graphmem run in another process, as a user runs it: the command line (optionally with a
fault injected around the real calls first), its environment, and its state."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from graphmem.server import WARMING

READY = "graphmem-launcher: ready"  # the launcher's line once Bolt answers

# Runs the command line in a fresh interpreter after executing $GRAPHMEM_TEST_INJECT
# (Python text that patches a real call to stall, wait or signal), so a test can stop
# a real load at a chosen point.
_MAIN = (
    "import os, sys\n"
    "exec(os.environ.get('GRAPHMEM_TEST_INJECT', ''))\n"
    "from graphmem.cli import main\n"
    "main(sys.argv[1:], prog_name='graphmem')\n"
)


def env(server, **extra: str) -> dict[str, str]:
    """This environment pointed at ``server`` (its password too), plus ``extra``; of
    graphmem's own variables only GRAPHMEM_WARM (the tests' choice) is kept."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_") or k == "GRAPHMEM_WARM"}
    out["GRAPHMEM_NEO4J_URI"] = server.uri
    if server.auth:
        out["GRAPHMEM_NEO4J_USER"], out["GRAPHMEM_NEO4J_PASSWORD"] = server.auth
    out.update(extra)
    return out


def cli(*args: str, environ: dict[str, str], inject: str = "", **popen) -> subprocess.Popen:
    """Start ``graphmem ARGS`` with ``inject`` executed first; text pipes for stdout/stderr."""
    return subprocess.Popen([sys.executable, "-c", _MAIN, *args],
                            env={**environ, "GRAPHMEM_TEST_INJECT": inject},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def run_cli(*args: str, environ: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``graphmem ARGS`` to its end (the installed command: what a user types)."""
    exe = Path(sys.executable).with_name("graphmem")
    return subprocess.run([str(exe), *args], env=environ, capture_output=True, text=True,
                          timeout=timeout, check=False)


def state(pid: int) -> str:
    """A process's state letter (``T``: stopped, ``Z``: a zombie), ``-`` once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "-"


def wait_state(pid: int, wanted: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while state(pid) != wanted:
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} is {state(pid)!r}, not {wanted!r}")
        time.sleep(0.05)


def warmer(log: Path) -> int | None:
    """The pid of the plan warmer the last start named in the launcher's log ``log``."""
    lines = log.read_text(errors="replace").split(READY)[-1].splitlines() if log.exists() else []
    named = [line.removeprefix(WARMING) for line in lines if line.startswith(WARMING)]
    return int(named[-1]) if named else None
