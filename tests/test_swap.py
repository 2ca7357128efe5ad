"""A bootstrap that replaces a database survives a kill at any step.

The kill is the real one (SIGKILL, from the process itself at the step named by
``GRAPHMEM_TEST_KILL_AT``: graphmem.swap.checkpoint); what follows is what a user types:
``graphmem server status`` (which finishes or rolls back what the killed bootstrap left,
and says so), ``server start`` if nothing runs, and a look at which database is served.
One home and the smallest fixture (LPA) for every step, each step bootstrapping it into a
tenant of its own, so the tenant found tells which database is served. The renames
themselves, in either direction and from every intermediate state, are checked on plain
folders (no server needed: it is the journal's rule, not Neo4j, that decides).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from procs import state

from graphmem import Entity, Memory, Scope, swap
from graphmem import server as srv
from graphmem.cli import main

pytestmark = pytest.mark.skipif(not (shutil.which("mvn") and shutil.which("java")), reason="needs Maven and Java")

LPA = Path(__file__).parent / "fixtures" / "companyfacts-CIK0001997711-lpa.json"
LPA_ENTITY = "cik:1997711"
BEFORE_THE_SWAP = ("build", "import", "finish")  # the old database serves on


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _graphmem(*args: str, **extra: str):
    """``graphmem ARGS`` as a user runs it, in this environment without graphmem's own
    variables (but ``extra``)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")} | extra
    return subprocess.run([str(Path(sys.executable).with_name("graphmem")), *args], env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A launcher home serving a database with LPA's entity in tenant ``t-initial``."""
    cfg = srv.ServerConfig(home=tmp_path_factory.mktemp("swap") / "home", port=_free_port(), heap="512m",
                           pagecache="64m")
    srv.start(cfg)
    try:
        with Memory.connect(cfg.uri) as mem:
            mem.put_entity(Scope(tenant="t-initial"), Entity(id=LPA_ENTITY))
        yield cfg
    finally:
        srv.stop(cfg)


def _served(cfg: srv.ServerConfig) -> list[str]:
    tenants = ["t-initial", *(f"t-{step}" for step in swap.STEPS)]
    with Memory.connect(cfg.uri) as mem:
        return [t for t in tenants if mem.entity(Scope(tenant=t), LPA_ENTITY)]


def _gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while state(pid) not in ("-", "Z"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.parametrize("step", swap.STEPS)
def test_a_bootstrap_killed_at_each_step_leaves_the_old_or_the_new_database(home, step):
    args = ("--home", str(home.home), "--port", str(home.port))
    if not srv.status(home).running:
        assert _graphmem("server", "start", *args).returncode == 0
    (before,) = _served(home)
    killed = _graphmem("bootstrap", "companyfacts", str(LPA), "--tenant", f"t-{step}", *args, "--replace",
                       "--heap", "512m", "--pagecache", "64m", GRAPHMEM_TEST_KILL_AT=step)
    assert killed.returncode == -9, killed.stderr
    staging = list(home.home.glob("bootstrap-*"))
    if step in ("import", "finish"):  # its child JVM died with it
        pid_file = staging[0] / "server" / ("importer.pid" if step == "import" else "launcher.pid")
        pid = int(pid_file.read_text()) if step == "import" else json.loads(pid_file.read_text())["pid"]
        assert _gone(pid), f"the {step} JVM (pid {pid}) outlived the bootstrap"

    status = _graphmem("server", "status", *args)
    if step in BEFORE_THE_SWAP:
        assert status.returncode == 0, status  # the old server was never stopped
        assert f"removed {staging[0]}, the staging folder of a killed bootstrap" in status.stderr
        assert "kept:" not in status.stdout
    else:
        assert "finished the swap of a killed bootstrap" in status.stderr, status
        assert status.returncode == (0 if step == "start" else 3)
        (kept,) = home.home.glob("neo4j.replaced-*")
        assert f"kept: {kept}" in status.stdout
        if status.returncode == 3:
            started = _graphmem("server", "start", *args)
            assert started.returncode == 0, started.stderr
            assert "finished" not in started.stderr  # done once, by `status`
    assert _served(home) == [before if step in BEFORE_THE_SWAP else f"t-{step}"]

    pruned = _graphmem("server", "prune", *args)
    assert pruned.returncode == 0 and pruned.stdout.startswith(
        "nothing kept" if step in BEFORE_THE_SWAP else "deleted ")
    assert sorted(p.name for p in home.home.iterdir()) == ["launcher.log", "launcher.pid", "neo4j"]


def test_a_swap_whose_old_database_still_serves_is_rolled_back(home):
    """A journal pointing forward while the old server still runs (killed as it was being
    stopped): the running server is left alone and the new database dropped."""
    if not srv.status(home).running:
        srv.start(home)
    served = _served(home)
    staged = home.home / "bootstrap-20260101T000000-1" / "server" / "neo4j"
    staged.mkdir(parents=True)
    swap._write(home.home, swap.Journal(staged=staged, aside=home.home / "neo4j.replaced-x", pid=1))
    result = CliRunner().invoke(main, ["server", "status", "--home", str(home.home), "--port", str(home.port)])
    assert result.exit_code == 0
    assert "rolled back the swap of a killed bootstrap (pid 1)" in result.output and "still running" in result.output
    assert _served(home) == served
    assert sorted(p.name for p in home.home.iterdir()) == ["launcher.log", "launcher.pid", "neo4j"]


# ---------------------------------------------------------------- the rule, on plain folders


def _layout(tmp_path: Path, d: str | None, a: str | None, s: str | None, direction: str):
    """A home whose database (D), aside (A) and staged (S) places hold a folder marked
    ``old`` or ``new`` (or nothing), under a journal going ``direction``."""
    home = tmp_path / "home"
    staged = home / "bootstrap-20260101T000000-1" / "server" / "neo4j"
    journal = swap.Journal(staged=staged, aside=home / "neo4j.replaced-x", pid=1, direction=direction)
    for place, mark in ((home / "neo4j", d), (journal.aside, a), (staged, s)):
        if mark:
            place.mkdir(parents=True)
            (place / mark).touch()
    staged.parent.mkdir(parents=True, exist_ok=True)
    swap._write(home, journal)
    return srv.ServerConfig(home=home, port=_free_port())


@pytest.mark.parametrize(("d", "a", "s", "direction", "served", "kept"), [
    ("old", None, "new", "forward", "new", True),  # killed after the stop
    (None, "old", "new", "forward", "new", True),  # killed between the renames
    ("new", "old", None, "forward", "new", True),  # killed once the new one started
    (None, None, "new", "forward", "new", False),  # a first bootstrap, killed before its rename
    ("new", "old", None, "back", "old", False),  # the new one failed to start; killed going back
    (None, "old", "new", "back", "old", False),
    ("old", None, "new", "back", "old", False),
])
def test_recovery_completes_the_journal_from_every_state(tmp_path, d, a, s, direction, served, kept):
    cfg = _layout(tmp_path, d, a, s, direction)
    lines = swap.recover(cfg)
    assert lines[0].startswith("finished" if direction == "forward" else "rolled back")
    assert (cfg.home / "neo4j" / served).exists()
    assert [p.name for p in cfg.home.glob("neo4j.replaced-*")] == (["neo4j.replaced-x"] if kept else [])
    assert not (cfg.home / "swap.json").exists() and not list(cfg.home.glob("bootstrap-*"))
    assert lines[-1].startswith("removed") and swap.recover(cfg) == []
