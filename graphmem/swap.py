"""Replacing a launcher's database so that every reader sees the old one or the whole new one.

``graphmem bootstrap --replace`` builds a complete database in a staging folder beside the
launcher's (``<home>/bootstrap-<stamp>-<pid>/server/neo4j``) and then puts it in place of
``<home>/neo4j``. Putting it there takes several steps (stop the server, move the old
database aside, move the new one in, start the server, drop the old one), and the process
can be killed between any two of them. So:

* **The journal decides.** Before its first step, :func:`replace` writes
  ``<home>/swap.json`` (to a temporary file, then renamed: it exists whole or not at all)
  naming the staged database, the place the old one goes and the direction: ``forward``,
  or ``back`` once the new database failed to start. Every step after it is one rename
  within the home's filesystem, which is atomic: at every instant each database is whole,
  in one of the places the journal names, and ``<home>/neo4j`` is the old one or the new.
* **The next command completes it.** :func:`recover` (``server start``, ``server status``,
  ``server prune``, ``bootstrap``, a command that starts the launcher) finds a journal
  whose bootstrap is gone and completes its renames in the journal's direction: the new
  database was complete before the journal was written, so ``forward`` serves it. A
  server still running on the old database is never stopped: the swap then goes back. It
  says which it did. A replaced database it moved aside stays, as a *kept copy*
  (``<home>/neo4j.replaced-<stamp>``: nobody saw the new one answer yet), listed by
  ``server status`` and deleted by ``server prune``.
* **One bootstrap per home.** A bootstrap holds an exclusive ``flock`` on the home folder
  from start to end; the kernel releases it when the process dies, so :func:`recover`
  never touches a live bootstrap's work, and knows every staging folder it finds then is a
  leftover.
* **Leftovers of a killed bootstrap** - its staging folder, and the importer or staging
  server if they outlived it (they are tied to it with ``PR_SET_PDEATHSIG`` on Linux:
  ``server.tied``, so they normally die with it) - are removed by the next
  :func:`recover`, which says so. A folder kept with ``--keep-work`` is left for
  ``server prune``.

``GRAPHMEM_TEST_KILL_AT=<step>`` makes a bootstrap SIGKILL itself at that step (``build``,
``import``, ``finish``, ``stop``, ``swap``, ``start``; see :func:`checkpoint`): the tests'
way to crash it where a user's machine might.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import signal
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from dataclasses import replace as changed
from pathlib import Path

from . import server as srv
from .errors import ServerError

JOURNAL = "swap.json"
KEPT = "neo4j.replaced-"
STAGING = "bootstrap-"
KEPT_WORK = "kept-work"  # marks a staging folder kept with --keep-work
IMPORTER_PID = "importer.pid"
STEPS = ("build", "import", "finish", "stop", "swap", "start")

_held: set[Path] = set()  # homes whose lock this process holds


def checkpoint(step: str) -> None:
    """The test hook: SIGKILL this process at ``step`` when ``$GRAPHMEM_TEST_KILL_AT``
    names it (``import`` and ``finish``: while the importer or the staging server runs;
    ``stop``: the old server stopped; ``swap``: the old database moved aside, the new one
    not yet in; ``start``: the new one serving, the journal not yet removed)."""
    if os.environ.get("GRAPHMEM_TEST_KILL_AT") == step:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class Journal:
    staged: Path  # the new database, until it is moved in
    aside: Path  # where the old one goes
    pid: int  # the bootstrap's
    direction: str = "forward"


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(home: Path, journal: Journal) -> None:
    tmp = home / (JOURNAL + ".tmp")
    with open(tmp, "w") as out:
        json.dump({k: str(v) for k, v in asdict(journal).items()}, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, home / JOURNAL)
    _fsync_dir(home)


def _read(home: Path) -> Journal | None:
    try:
        data = json.loads((home / JOURNAL).read_text())
    except FileNotFoundError:
        return None
    return Journal(staged=Path(data["staged"]), aside=Path(data["aside"]), pid=int(data["pid"]),
                   direction=data["direction"])


def _remove(home: Path) -> None:
    (home / JOURNAL).unlink(missing_ok=True)
    _fsync_dir(home)


@contextlib.contextmanager
def exclusive(home: Path) -> Iterator[None]:
    """Hold ``home``'s bootstrap lock (a ``flock`` on the folder itself), or raise
    ServerError naming the bootstrap that holds it."""
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(home, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pids = sorted({f.name.rpartition("-")[2] for f in home.glob(STAGING + "*-*")})
            raise ServerError(f"a bootstrap{' (pid ' + ', '.join(pids) + ')' if pids else ''} is running "
                              f"for {home}; wait for it to finish") from None
        _held.add(home.resolve())
        try:
            yield
        finally:
            _held.discard(home.resolve())
    finally:
        os.close(fd)  # releases the lock


def recover(cfg: srv.ServerConfig) -> list[str]:
    """Complete or undo a swap a killed bootstrap left in ``cfg.home`` and remove what else
    it left; return what was done, one line each (nothing: an empty list). Raises
    ServerError while another process's bootstrap runs there with a swap under way."""
    home = cfg.home
    if not home.is_dir() or not (home / JOURNAL).exists() and not _leftovers(home):
        return []
    if home.resolve() in _held:
        return _recover(cfg)
    try:
        with exclusive(home):
            return _recover(cfg)
    except ServerError:
        if (home / JOURNAL).exists():
            raise
        return []  # a bootstrap is building: its folder is not a leftover


def _recover(cfg: srv.ServerConfig) -> list[str]:
    notes = []
    journal = _read(cfg.home)
    if journal is not None:
        notes.append(_complete(cfg, journal))
    for folder in _leftovers(cfg.home):
        notes.extend(_reap(folder))
    return notes


def _complete(cfg: srv.ServerConfig, journal: Journal) -> str:
    """Finish ``journal``'s swap in its direction (back if the old database is still being
    served), remove the journal, and say which."""
    old_served = journal.staged.exists() and srv.status(cfg).running
    if journal.direction == "back" or old_served:
        _back(cfg, journal)
        done = (f"rolled back the swap of a killed bootstrap (pid {journal.pid}): {cfg.data_dir} is "
                f"the database it was to replace{', still running' if old_served else ''}")
    else:
        done = _forward(cfg, journal)
    _remove(cfg.home)
    return done


def _forward(cfg: srv.ServerConfig, journal: Journal) -> str:
    if journal.staged.exists():
        if cfg.data_dir.exists():
            cfg.data_dir.rename(journal.aside)
        journal.staged.rename(cfg.data_dir)
    kept = f"; the database it replaced is kept in {journal.aside} (`graphmem server prune` deletes it)" \
        if journal.aside.exists() else ""
    return (f"finished the swap of a killed bootstrap (pid {journal.pid}): {cfg.data_dir} is the new "
            f"database{kept}")


def _back(cfg: srv.ServerConfig, journal: Journal) -> None:
    if not journal.staged.exists() and cfg.data_dir.exists():
        cfg.data_dir.rename(journal.staged)  # the new one out, deleted with its staging folder
    if journal.aside.exists():
        journal.aside.rename(cfg.data_dir)


def _leftovers(home: Path) -> list[Path]:
    """Staging folders in ``home`` but those kept with --keep-work."""
    return sorted(f for f in home.glob(STAGING + "*-*") if f.is_dir() and not (f / KEPT_WORK).exists())


def _reap(folder: Path) -> list[str]:
    """Stop what a killed bootstrap left running in its staging ``folder``, delete the
    folder, and say so."""
    notes = []
    importer = _read_pid(folder / "server" / IMPORTER_PID)
    if importer and _cmdline_has(importer, str(folder)):
        os.kill(importer, signal.SIGKILL)
        notes.append(f"stopped the importer (pid {importer}) a killed bootstrap left running")
    stage = srv.ServerConfig(home=folder / "server")
    server = srv.status(stage).pid
    if srv.stop(stage):
        notes.append(f"stopped the staging server (pid {server}) a killed bootstrap left running")
    shutil.rmtree(folder, ignore_errors=True)
    notes.append(f"removed {folder}, the staging folder of a killed bootstrap")
    return notes


def _read_pid(file: Path) -> int | None:
    try:
        return int(file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def _cmdline_has(pid: int, text: str) -> bool:
    try:
        return text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def replace(cfg: srv.ServerConfig, staged: Path) -> None:
    """Put the complete database in ``staged`` (a launcher data directory in ``cfg.home``'s
    filesystem) in place of ``cfg``'s, and start ``cfg``'s server on it; if that start
    fails, the old one goes back (its server started again if it ran) and the error is
    raised. The old database is deleted once the new one answers. See the module
    docstring for a kill at any step."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    # absolute: the next command may name the home otherwise (another working folder)
    journal = Journal(staged=staged.absolute(), aside=cfg.home.absolute() / f"{KEPT}{stamp}", pid=os.getpid())
    old = srv.status(cfg)
    running = old.running
    _write(cfg.home, journal)
    if running:
        srv.stop(cfg)
    checkpoint("stop")
    if cfg.data_dir.exists():
        cfg.data_dir.rename(journal.aside)
    checkpoint("swap")
    staged.rename(cfg.data_dir)
    try:
        srv.start(cfg, warm=True)
    except BaseException:
        srv.stop(cfg)
        _write(cfg.home, changed(journal, direction="back"))
        _back(cfg, journal)
        _remove(cfg.home)
        if running:
            srv.start(_where_it_ran(cfg, old))
        raise
    checkpoint("start")
    dropped = staged.parent / "replaced"  # not a place the journal names: a kill leaves it to the reaper
    if journal.aside.exists():
        journal.aside.rename(dropped)
    _remove(cfg.home)
    shutil.rmtree(dropped, ignore_errors=True)


def _where_it_ran(cfg: srv.ServerConfig, old: srv.ServerStatus) -> srv.ServerConfig:
    """``cfg`` on the port the old server ran on: the new one's (``cfg.port``) may be the
    very reason it did not start, and the old one goes back to serve where it was."""
    return changed(cfg, port=old.port or cfg.port)


# ---------------------------------------------------------------- kept copies


@dataclass(frozen=True)
class Kept:
    """A replaced database (or a staging folder kept with --keep-work) left in a home."""

    path: Path
    bytes: int

    def line(self) -> str:
        return f"kept: {self.path} ({self.bytes / 2**20:,.1f} MiB)"


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def kept(cfg: srv.ServerConfig) -> list[Kept]:
    """The kept copies of replaced databases and kept staging folders in ``cfg.home``."""
    if not cfg.home.is_dir():
        return []
    found = [*cfg.home.glob(KEPT + "*"), *(f.parent for f in cfg.home.glob(f"{STAGING}*-*/{KEPT_WORK}"))]
    return [Kept(path, _size(path)) for path in sorted(found)]


def prune(cfg: srv.ServerConfig) -> list[Kept]:
    """Delete what :func:`kept` lists; return it. A home that does not exist holds
    nothing (and is not made: a mistyped --home leaves no folder behind)."""
    if not cfg.home.is_dir():
        return []
    with exclusive(cfg.home):
        gone = kept(cfg)
        for copy in gone:
            shutil.rmtree(copy.path)
    return gone
