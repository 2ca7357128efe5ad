"""The embedded launcher's command: start, refuse a second start, stop without leftovers."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from procs import state, warmer

from graphmem import Memory
from graphmem import server as srv
from graphmem.cli import main

pytestmark = [pytest.mark.skipif(
    not (shutil.which("mvn") and shutil.which("java")), reason="needs Maven and Java"
), pytest.mark.usefixtures("short_lived_jvms")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_start_status_second_start_stop(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("GRAPHMEM_WARM")  # the default: a start warms
    home, port = tmp_path / "home", _free_port()
    args = ["--home", str(home), "--port", str(port)]
    runner = CliRunner()
    started = runner.invoke(main, ["server", "start", *args, "--heap", "512m", "--pagecache", "64m"])
    assert started.exit_code == 0, started.output
    cfg = srv.ServerConfig(home=home, port=port)
    pid = srv.status(cfg).pid
    try:
        warming = warmer(cfg.log_file)  # making the first calls, detached
        assert warming is not None, cfg.log_file.read_text()
        running = state(warming) not in "-Z"  # first: a warmer that ends after this has written its line
        assert running or "as_of (4)=" in cfg.log_file.read_text(), cfg.log_file.read_text()
        assert pid is not None and Path(f"/proc/{pid}").exists()
        status = runner.invoke(main, ["server", "status", *args])
        assert status.exit_code == 0 and f"pid {pid}" in status.output
        with Memory.connect(f"bolt://127.0.0.1:{port}") as mem:
            assert mem.server_info()["version"].startswith("5.26")
        again = runner.invoke(main, ["server", "start", *args])
        assert again.exit_code == 1
        assert "already running" in again.output
    finally:
        stopped = runner.invoke(main, ["server", "stop", *args])
    assert stopped.exit_code == 0 and "stopped" in stopped.output
    assert not Path(f"/proc/{pid}").exists() or _is_zombie(pid)
    assert not (home / "launcher.pid").exists()
    assert not (home / "neo4j" / "data" / "databases" / "store_lock").exists() or _unlocked(home)
    after = runner.invoke(main, ["server", "status", *args])
    assert after.exit_code == 3 and "not running" in after.output


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except FileNotFoundError:
        return True


def _unlocked(home: Path) -> bool:
    """Neo4j keeps the lock file but releases its OS lock on clean shutdown."""
    import fcntl

    with open(home / "neo4j" / "data" / "databases" / "store_lock", "rb+") as handle:
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.lockf(handle, fcntl.LOCK_UN)
        return True


def test_start_failure_reports_the_log_tail(tmp_path: Path):
    # a heap size the JVM refuses: the launcher exits before Bolt answers
    cfg = srv.ServerConfig(home=tmp_path / "home", port=_free_port(), heap="lots", pagecache="64m")
    try:
        with pytest.raises(srv.ServerError, match="launcher exited|did not answer") as info:
            srv.start(cfg, timeout=120)
        assert str(cfg.log_file) in str(info.value)
        assert "\n" not in str(info.value)  # one line; the log's last lines are a note
        assert cfg.log_file.read_text().strip().splitlines()[-1] in info.value.__notes__[0]
        assert not cfg.pid_file.exists()
    finally:
        srv.stop(cfg)


def test_start_refuses_a_port_something_already_listens_on(tmp_path: Path):
    # whatever listens there (another Neo4j would answer Bolt) is never taken for ours
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    cfg = srv.ServerConfig(home=tmp_path / "home", port=port, heap="512m", pagecache="64m")
    try:
        with pytest.raises(srv.ServerError, match=f"port {port} on 127.0.0.1 is already in use"):
            srv.start(cfg, timeout=120)
        assert not cfg.pid_file.exists()
        assert not srv.status(cfg).running
    finally:
        busy.close()


def test_stop_without_a_server_says_so(tmp_path: Path):
    assert srv.stop(srv.ServerConfig(home=tmp_path, port=1)) is False
    assert os.path.exists(tmp_path)
