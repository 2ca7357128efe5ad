"""Running Neo4j and building databases offline, at their edges: passwords, a killed swap
in a home named relative, a bootstrap onto a port in use or under a server started
meanwhile, an export imported from another folder, ports out of range.

Each test starts what it needs on a real launcher (a home of its own, free ports) or
works on plain folders where the journal alone decides (graphmem.swap).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem import InputError, Memory, Scope, swap
from graphmem import server as srv
from graphmem.cli import main

pytestmark = [pytest.mark.skipif(not (shutil.which("mvn") and shutil.which("java")), reason="needs Maven and Java"),
              pytest.mark.usefixtures("short_lived_jvms")]  # tests/conftest.py

PASSWORD = "ops-password-8chars"


@pytest.fixture
def home(tmp_path):
    """A fresh launcher home; whatever server a test left running there is stopped after."""
    path = tmp_path / "home"
    yield path
    srv.stop(srv.ServerConfig(home=path))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _graphmem(*args: str, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess:
    """``graphmem ARGS`` as a user runs it, without graphmem's own variables (but ``extra``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_") or k == "GRAPHMEM_WARM"} | extra
    return subprocess.run([str(Path(sys.executable).with_name("graphmem")), *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600, check=False)


# ---------------------------------------------------------------- server start --password


def test_server_start_with_a_password_on_a_fresh_home_serves_with_that_password(home):
    """`graphmem server start --password` on a new home: the launcher opens Bolt before it
    sets the password, so a start that tries the password at once is refused by Neo4j
    (an 'unexpected AuthError', the server left running) unless it waits for the launcher."""
    port = _free_port()
    started = _graphmem("server", "start", "--home", str(home), "--port", str(port), "--heap", "512m",
                        "--pagecache", "64m", "--no-warm", "--password", PASSWORD)
    assert started.returncode == 0, started.stderr
    assert "started pid" in started.stdout
    with Memory.connect(f"bolt://127.0.0.1:{port}", ("neo4j", PASSWORD)) as mem:
        assert mem.server_info()["version"].startswith("5.26")


def test_a_password_neo4j_refuses_is_an_input_error_and_no_server_is_left_running(home):
    """Neo4j wants 8 characters at the least: a shorter one made the launcher's main thread
    fail while its JVM served on with the password unset; `server start` said 'unexpected
    AuthError ... (a bug?)' and left that server running."""
    cfg = srv.ServerConfig(home=home, port=_free_port(), heap="512m", pagecache="64m")
    with pytest.raises(InputError, match="at least 8 characters"):
        srv.start(srv.ServerConfig(home=home, port=cfg.port, heap="512m", pagecache="64m", password="short"),
                  timeout=120)
    assert not srv.status(cfg).running
    started = _graphmem("server", "start", "--home", str(home), "--port", str(cfg.port), "--no-warm",
                        "--password", "short")
    assert started.returncode != 0 and "password" in started.stderr and "8 characters" in started.stderr
    assert not srv.status(cfg).running


# ---------------------------------------------------------------- the swap's journal


_REPLACE = ("import sys\nfrom pathlib import Path\nfrom graphmem import server as srv, swap\n"
            "cfg = srv.ServerConfig(home=Path(sys.argv[1]), port=int(sys.argv[2]))\n"
            "with swap.exclusive(cfg.home):\n    swap.replace(cfg, Path(sys.argv[3]))\n")


def test_a_swap_killed_in_a_home_named_relative_is_finished_by_a_command_naming_it_absolute(tmp_path):
    """`graphmem bootstrap --home gm` run in /srv and killed between the swap's renames; then
    `graphmem server status --home /srv/gm` from elsewhere. The journal named the
    databases relative to the bootstrap's working folder: the next command found neither,
    said it had 'finished the swap' and deleted the new database with the staging folder,
    leaving the home with no database at all."""
    workdir = tmp_path / "srv"
    home = workdir / "gm"
    (home / "neo4j").mkdir(parents=True)
    (home / "neo4j" / "old").touch()
    staged = Path("gm") / "bootstrap-20260101T000000-1" / "server" / "neo4j"
    (workdir / staged).mkdir(parents=True)
    (workdir / staged / "new").touch()
    port = str(_free_port())
    killed = subprocess.run([sys.executable, "-c", _REPLACE, "gm", port, str(staged)], cwd=workdir,
                            env=os.environ | {"GRAPHMEM_TEST_KILL_AT": "swap"}, capture_output=True, text=True,
                            timeout=120, check=False)
    assert killed.returncode == -9, killed.stderr
    status = _graphmem("server", "status", "--home", str(home), "--port", port, cwd=tmp_path)
    assert "finished the swap of a killed bootstrap" in status.stderr, status
    assert (home / "neo4j" / "new").exists(), sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    (kept,) = home.glob("neo4j.replaced-*")
    assert (kept / "old").exists()


LPA = Path(__file__).parent / "fixtures" / "companyfacts-CIK0001997711-lpa.json"


def test_a_bootstrap_with_a_password_serves_the_new_database_with_it(home):
    """`graphmem bootstrap companyfacts ... --password P` (the server's password, as for
    `server start`): the new database's server started with auth on was refused by its
    own password at once, so every such bootstrap swapped the new database back out
    and failed with 'unexpected AuthError'."""
    port = _free_port()
    done = _graphmem("bootstrap", "companyfacts", str(LPA), "--tenant", "t-pw", "--home", str(home),
                     "--port", str(port), "--password", PASSWORD, "--heap", "512m", "--pagecache", "64m")
    assert done.returncode == 0, done.stderr
    with Memory.connect(f"bolt://127.0.0.1:{port}", ("neo4j", PASSWORD)) as mem:
        assert mem.counts(Scope(tenant="t-pw"))["versions"] == 592


# ---------------------------------------------------------------- prune, export, replace


def test_prune_of_a_home_that_never_ran_makes_no_folder(tmp_path):
    """`graphmem server prune --home` with a mistyped path said 'nothing kept' and made
    the folder (and its parents): a later `server status` there then looks like a home."""
    home = tmp_path / "no-such" / "home"
    pruned = CliRunner().invoke(main, ["server", "prune", "--home", str(home)])
    assert pruned.exit_code == 0 and pruned.output == "nothing kept\n"
    assert not (tmp_path / "no-such").exists()


def test_an_export_to_a_relative_folder_imports_from_another_working_folder(mem, tmp_path, monkeypatch):
    """`graphmem bootstrap companyfacts FILE --csv out/bootstrap` prints `neo4j-admin ...
    @out/bootstrap/import.args`; run from Neo4j's own folder (as its docs do) with the
    args file's full path, the importer found no `out/bootstrap/entities.csv`: the args
    named the files relative to where graphmem had run."""
    from graphmem.loaders import bootstrap as loader

    from graphmem import offline

    monkeypatch.chdir(tmp_path)
    scope = Scope(tenant=f"test-ops-{uuid.uuid4().hex[:12]}")
    offline.export(Path("out") / "bootstrap", lambda build: loader.load_files(build, scope, LPA), probe=mem.db)
    elsewhere = tmp_path / "neo4j-home"
    (elsewhere / "conf").mkdir(parents=True)
    (elsewhere / "data").mkdir()
    imported = subprocess.run(
        [srv.java_path(), *srv.JVM_FLAGS, "-cp", str(srv.build()), offline.ADMIN_TOOL, "database", "import", "full",
         "neo4j", "--overwrite-destination=true", f"@{tmp_path / 'out' / 'bootstrap' / 'import.args'}"],
        env=os.environ | {"NEO4J_HOME": str(elsewhere / "data"), "NEO4J_CONF": str(elsewhere / "conf")},
        cwd=elsewhere, capture_output=True, text=True, timeout=600, check=False)
    assert imported.returncode == 0, (imported.stdout + imported.stderr)[-2000:]


def test_a_replace_onto_a_port_in_use_leaves_the_old_server_serving(mem, home):
    """`graphmem bootstrap ... --replace --port Q` on a home whose server runs on another
    port P, with Q taken by something else: the build, import and finish ran, the swap
    stopped the old server, could not start the new one on Q, moved the old database
    back - and could not start it on Q either: the old database was left unserved."""
    from graphmem import Entity, offline
    from graphmem.errors import ServerError

    cfg = srv.ServerConfig(home=home, port=_free_port(), heap="512m", pagecache="64m")
    srv.start(cfg)
    with Memory.connect(cfg.uri) as old:
        old.put_entity(Scope(tenant="t-old"), Entity(id="cik:1"))
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    try:
        other = srv.ServerConfig(home=home, port=taken, heap="512m", pagecache="64m")
        with pytest.raises(ServerError, match=f"port {taken}"):
            offline.bootstrap(other, lambda build: build.put_entity(Scope(tenant="t-new"), Entity(id="cik:1")),
                              replace=True, probe=mem.db)
        assert srv.status(cfg).running
        staged = home / "bootstrap-20260101T000000-1" / "server" / "neo4j"  # the swap alone, as a bootstrap calls it
        staged.mkdir(parents=True)
        with swap.exclusive(home), pytest.raises(ServerError, match=f"port {taken}"):
            swap.replace(other, staged)
        assert staged.is_dir()  # moved back out
    finally:
        busy.close()
    assert srv.status(cfg).running
    with Memory.connect(cfg.uri) as served:
        assert served.entity(Scope(tenant="t-old"), "cik:1") is not None


def test_a_server_started_and_written_during_a_first_bootstrap_is_not_replaced_without_replace(mem, home):
    """A first bootstrap (no database, nothing running: no --replace needed) runs for a
    while; meanwhile `graphmem server start` on that home succeeds (the bootstrap's lock
    only keeps other bootstraps out) and someone writes to it. The swap then stopped that
    server, swapped its database out and deleted it: data lost without --replace."""
    from graphmem import Entity, offline

    cfg = srv.ServerConfig(home=home, port=_free_port(), heap="512m", pagecache="64m")

    def load(build):
        started = _graphmem("server", "start", "--home", str(home), "--port", str(cfg.port), "--heap", "512m",
                            "--pagecache", "64m", "--no-warm")
        assert started.returncode == 0, started.stderr
        with Memory.connect(cfg.uri) as meanwhile:
            meanwhile.put_entity(Scope(tenant="t-meanwhile"), Entity(id="cik:1"))
        build.put_entity(Scope(tenant="t-new"), Entity(id="cik:1"))

    with pytest.raises(InputError, match="holds data; pass --replace"):
        offline.bootstrap(cfg, load, probe=mem.db)
    assert srv.status(cfg).running
    with Memory.connect(cfg.uri) as served:
        assert served.entity(Scope(tenant="t-meanwhile"), "cik:1") is not None


@pytest.mark.parametrize("port", ["0", "77170", "-1"])
def test_a_port_out_of_range_is_a_usage_error_naming_the_option(tmp_path, port):
    """`graphmem server start --port 77170` (a digit too many) said 'unexpected
    OverflowError ... (a bug?)'; `--port 0` started a launcher on a random port and
    waited for Bolt on port 0 until the timeout."""
    result = CliRunner().invoke(main, ["server", "start", "--home", str(tmp_path / "home"), "--port", port,
                                       "--timeout", "5", "--no-warm"])
    assert result.exit_code == 2, result.output
    assert "--port" in result.output
    assert not (tmp_path / "home" / "launcher.pid").exists()


def test_a_replace_without_a_port_serves_the_new_database_where_the_old_one_was(home):
    """`graphmem bootstrap ... --replace` on a home whose server runs on port P, with no
    --port: the new database came up on the default 7687, away from every client of P."""
    cfg = srv.ServerConfig(home=home, port=_free_port(), heap="512m", pagecache="64m")
    srv.start(cfg)
    done = _graphmem("bootstrap", "companyfacts", str(LPA), "--tenant", "t-here", "--home", str(home),
                     "--replace", "--heap", "512m", "--pagecache", "64m")
    assert done.returncode == 0, done.stderr
    assert srv.status(cfg).port == cfg.port
    with Memory.connect(cfg.uri) as mem:
        assert mem.counts(Scope(tenant="t-here"))["versions"] == 592
