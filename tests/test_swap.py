"""A bootstrap that replaces a database survives a kill at any step.

The kill is the real one (SIGKILL, sent by the process itself at the step named by
``GRAPHMEM_TEST_KILL_AT``: graphmem.swap.checkpoint); what follows is what a user types:
``graphmem server status`` (which finishes or rolls back what was left, and says so),
``server start`` if nothing runs, and a look at which database is served (each database
holds LPA's entity in a tenant of its own, so the tenant found tells which one).

* Before the swap (build, import, finish): ``graphmem bootstrap --replace`` of the
  smallest fixture (LPA), killed there; its child JVM must die with it.
* The swap's own steps (stop, swap, start): ``swap.replace`` as the bootstrap calls it,
  under the home's lock, in a process killed there, with a complete database ready to
  swap in (the spare, then whichever the previous step left aside): what happens before
  it in a bootstrap is the three steps above, and costs a minute a run.
* The journal's rule from every intermediate state, on plain folders (no server needed:
  the journal decides, not Neo4j).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from procs import state, warmer

from graphmem import Entity, Memory, Scope, swap
from graphmem import server as srv
from graphmem.cli import main

pytestmark = [pytest.mark.skipif(not (shutil.which("mvn") and shutil.which("java")), reason="needs Maven and Java"),
              pytest.mark.usefixtures("short_lived_jvms")]  # tests/conftest.py

LPA = Path(__file__).parent / "fixtures" / "companyfacts-CIK0001997711-lpa.json"
LPA_ENTITY = "cik:1997711"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _graphmem(*args: str, **extra: str):
    """``graphmem ARGS`` as a user runs it, in this environment without graphmem's own
    variables (but ``extra``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_") or k == "GRAPHMEM_WARM"} | extra
    return subprocess.run([str(Path(sys.executable).with_name("graphmem")), *args], env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def _database(folder: Path, tenant: str) -> Path:
    """A complete database of its own in ``folder``, LPA's entity in ``tenant``."""
    cfg = srv.ServerConfig(home=folder, port=_free_port(), heap="512m", pagecache="64m")
    srv.start(cfg, tie=True)
    try:
        with Memory.connect(cfg.uri) as mem:
            mem.put_entity(Scope(tenant=tenant), Entity(id=LPA_ENTITY))
    finally:
        srv.stop(cfg)
    return cfg.data_dir


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A launcher home serving a database with LPA's entity in tenant ``t-initial``, and a
    spare database (tenant ``t-spare``) outside it to swap in."""
    root = tmp_path_factory.mktemp("swap")
    cfg = srv.ServerConfig(home=root / "home", port=_free_port(), heap="512m", pagecache="64m")
    spare = SimpleNamespace(path=_database(root / "spare", "t-spare"), tenant="t-spare")
    srv.start(cfg)
    try:
        with Memory.connect(cfg.uri) as mem:
            mem.put_entity(Scope(tenant="t-initial"), Entity(id=LPA_ENTITY))
        yield SimpleNamespace(cfg=cfg, spare=spare, args=("--home", str(cfg.home), "--port", str(cfg.port)))
    finally:
        srv.stop(cfg)


def _served(cfg: srv.ServerConfig) -> list[str]:
    tenants = ["t-initial", "t-spare", *(f"t-{step}" for step in swap.STEPS)]
    with Memory.connect(cfg.uri) as mem:
        return [t for t in tenants if mem.entity(Scope(tenant=t), LPA_ENTITY)]


def _gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while state(pid) not in ("-", "Z"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _running(home) -> srv.ServerConfig:
    if not srv.status(home.cfg).running:
        assert _graphmem("server", "start", "--no-warm", *home.args).returncode == 0
        assert warmer(home.cfg.log_file) is None  # no planning in the background to compete with the tests
    return home.cfg


@pytest.mark.parametrize("step", ["build", "import", "finish"])
def test_a_bootstrap_killed_before_its_swap_leaves_the_old_database_serving(home, step):
    (before,) = _served(_running(home))
    killed = _graphmem("bootstrap", "companyfacts", str(LPA), "--tenant", f"t-{step}", *home.args, "--replace",
                       "--heap", "512m", "--pagecache", "64m", GRAPHMEM_TEST_KILL_AT=step)
    assert killed.returncode == -9, killed.stderr
    (staging,) = home.cfg.home.glob("bootstrap-*")
    if step != "build":  # its child JVM died with it
        pid_file = staging / "server" / ("importer.pid" if step == "import" else "launcher.pid")
        pid = int(pid_file.read_text()) if step == "import" else json.loads(pid_file.read_text())["pid"]
        assert _gone(pid), f"the {step} JVM (pid {pid}) outlived the bootstrap"
    status = _graphmem("server", "status", *home.args)
    assert status.returncode == 0, status  # the old server was never stopped
    assert f"removed {staging}, the staging folder of a killed bootstrap" in status.stderr
    assert "kept:" not in status.stdout
    assert _served(home.cfg) == [before]
    assert sorted(p.name for p in home.cfg.home.iterdir()) == ["launcher.log", "launcher.pid", "neo4j"]


# the swap itself, killed at each of its steps: swap.replace as a bootstrap calls it, on a
# complete database (the spare, then whichever one the previous step left aside)
_REPLACE = ("import sys\nfrom pathlib import Path\nfrom graphmem import server as srv, swap\n"
            "cfg = srv.ServerConfig(home=Path(sys.argv[1]), port=int(sys.argv[2]), heap='512m', pagecache='64m')\n"
            "with swap.exclusive(cfg.home):\n    swap.replace(cfg, Path(sys.argv[3]))\n")


@pytest.mark.parametrize("step", ["stop", "swap", "start"])
def test_a_swap_killed_at_each_step_is_finished_by_the_next_command(home, step):
    (before,) = _served(_running(home))
    staged = home.cfg.home / "bootstrap-20260101T000000-1" / "server" / "neo4j"
    staged.parent.mkdir(parents=True)
    home.spare.path.rename(staged)
    killed = subprocess.run([sys.executable, "-c", _REPLACE, str(home.cfg.home), str(home.cfg.port), str(staged)],
                            env=os.environ | {"GRAPHMEM_TEST_KILL_AT": step}, capture_output=True, text=True,
                            timeout=600, check=False)
    assert killed.returncode == -9, killed.stderr
    status = _graphmem("server", "status", *home.args)
    assert "finished the swap of a killed bootstrap" in status.stderr, status
    assert status.returncode == (0 if step == "start" else 3)
    assert warmer(home.cfg.log_file) is None  # GRAPHMEM_WARM=0 (tests/conftest.py) reaches the swap's start
    (kept,) = home.cfg.home.glob("neo4j.replaced-*")
    assert f"kept: {kept}" in status.stdout
    if status.returncode == 3:
        started = _graphmem("server", "start", "--no-warm", *home.args)
        assert started.returncode == 0, started.stderr
        assert "finished" not in started.stderr  # done once, by `status`
    assert _served(home.cfg) == [home.spare.tenant]
    kept.rename(home.spare.path)  # the next step's new database
    home.spare.tenant = before
    assert sorted(p.name for p in home.cfg.home.iterdir()) == ["launcher.log", "launcher.pid", "neo4j"]


def test_kept_copies_are_listed_and_pruned(tmp_path):
    cfg = srv.ServerConfig(home=tmp_path / "home", port=_free_port())
    (cfg.home / "neo4j.replaced-20260101T000000000000").mkdir(parents=True)
    (cfg.home / "neo4j.replaced-20260101T000000000000" / "store").write_bytes(b"x" * 2**20)
    (cfg.home / "bootstrap-20260101T000000-1" / "csv").mkdir(parents=True)
    (cfg.home / "bootstrap-20260101T000000-1" / swap.KEPT_WORK).touch()  # kept with --keep-work
    args = ["--home", str(cfg.home), "--port", str(cfg.port)]
    status = CliRunner().invoke(main, ["server", "status", *args])
    assert status.exit_code == 3
    assert f"kept: {cfg.home / 'neo4j.replaced-20260101T000000000000'} (1.0 MiB)" in status.output
    assert f"kept: {cfg.home / 'bootstrap-20260101T000000-1'} (0.0 MiB)" in status.output
    pruned = CliRunner().invoke(main, ["server", "prune", *args])
    assert pruned.exit_code == 0 and pruned.output.count("deleted ") == 2
    assert list(cfg.home.iterdir()) == []
    assert CliRunner().invoke(main, ["server", "prune", *args]).output == "nothing kept\n"


def test_a_swap_whose_old_database_still_serves_is_rolled_back(home):
    """A journal pointing forward while the old server still runs (killed as it was being
    stopped): the running server is left alone and the new database dropped."""
    served = _served(_running(home))
    staged = home.cfg.home / "bootstrap-20260101T000000-1" / "server" / "neo4j"
    staged.mkdir(parents=True)
    swap._write(home.cfg.home, swap.Journal(staged=staged, aside=home.cfg.home / "neo4j.replaced-x", pid=1))
    result = CliRunner().invoke(main, ["server", "status", *home.args])
    assert result.exit_code == 0
    assert "rolled back the swap of a killed bootstrap (pid 1)" in result.output and "still running" in result.output
    assert _served(home.cfg) == served
    assert sorted(p.name for p in home.cfg.home.iterdir()) == ["launcher.log", "launcher.pid", "neo4j"]


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
