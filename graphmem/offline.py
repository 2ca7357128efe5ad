"""A new database built offline with Neo4j's importer, put in place of the launcher's.

``bootstrap(cfg, load)`` is the whole route for the embedded launcher (graphmem.server):

1. **refuse** a target that holds data unless ``replace`` (a running target is asked;
   a stopped one that has a database is taken to hold data), asked again before the
   swap (a server may have been started and written to meanwhile);
2. **build** in a staging folder beside the target's (``<home>/bootstrap-<stamp>``):
   ``load`` writes into a :class:`graphmem.bulk.Build`, whose rows become the
   importer's CSV files (graphmem.importcsv); the search-text probe (graphmem.probe)
   runs on the target's running server when it is going to be replaced anyway, else on
   a server started on the staging folder while the input is read;
3. **import**: ``neo4j-admin database import full`` (Neo4j's own importer, from the
   launcher's Maven dependencies: ``org.neo4j.cli.AdminTool``) writes the store files of
   database ``neo4j`` in the staging folder, bypassing transactions;
4. **finish** on a server started on the staging folder (:func:`finish`): what the
   importer cannot write (``bootstrap.entity_aliases``, ``bootstrap.key_flags``), then
   the schema objects (constraints, indexes, the full-text index; no data migration,
   ``schema.fresh``), populated before it returns;
5. **swap** (graphmem.swap): stop the target, move its database aside, move the new one
   in, start the target's server on it; if that start fails, the old database goes
   back and its server is started again. The old database is deleted only once the
   new one answers.

Until step 5 nothing of the target is touched, so a failure (bad input, the importer,
a migration, a kill) leaves the old database where it was, serving as before; the
staging folder is removed (``keep=True`` keeps it, for a look at the CSV files; a swap
interrupted by an exception leaves it to the next command, which completes the swap). Step 5
is journaled (graphmem.swap): after a kill in it, the next command that touches the home
serves the old database or the whole new one, and says which. A first bootstrap takes
the same route with no old database: a kill before its swap leaves the home without one.

The bootstrap holds the home's lock throughout (one at a time), and its child JVMs (the
importer, the staging server) are tied to it: they die with it (``server.tied``), and
what a kill leaves anyway is removed by the next command (``swap.recover``).

The importer's memory (:class:`Sizes`) is chosen from the machine's available memory:
with too little off-heap memory it makes several passes over the relationships. The
servers run with the launcher's own heap and page cache: a page cache the size of the
store made no measurable difference to the finish (the operating system's file cache
holds the store the importer has just written; docs/PERFORMANCE.md).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import neo4j

from . import schema, swap
from . import server as srv
from .bulk import Build, Totals
from .db import Database
from .errors import InputError, ServerError
from .importcsv import GraphCsv, ImportInput
from .memory import Memory
from .probe import Templates

T = TypeVar("T")
ADMIN_TOOL = "org.neo4j.cli.AdminTool"


@dataclass
class BootstrapReport:
    """What a bootstrap did: seconds per step, what the importer wrote, peak memory."""

    home: str
    uri: str = ""
    totals: Totals = field(default_factory=Totals)
    files: dict[str, int] = field(default_factory=dict)  # rows per importer input file
    seconds: dict[str, float] = field(default_factory=dict)  # build, import, finish, swap, total
    peak_rss_mb: dict[str, float] = field(default_factory=dict)  # importer, server (JVMs)
    memory: dict[str, str] = field(default_factory=dict)  # the importer's (Sizes)
    replaced: bool = False
    recovered: list[str] = field(default_factory=list)  # what a killed bootstrap had left (swap.recover)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _driver(uri: str, password: str | None) -> neo4j.Driver:
    auth = ("neo4j", password) if password else None
    return neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF")


def check_target(cfg: srv.ServerConfig, replace: bool) -> bool:
    """Refuse to touch a database that holds data unless ``replace``; True if the
    target's server is running."""
    status = srv.status(cfg)
    if status.running:
        with Memory(_driver(status.uri or cfg.uri, cfg.password)) as mem:
            holds = mem.db.read_one("bootstrap.holds_data")["holds_data"]
        if holds and not replace:
            raise InputError(str(cfg.home), f"the database served at {status.uri} holds data; "
                             "pass --replace to replace it with the bootstrapped one")
        if status.uri != cfg.uri:  # the new database is to be served elsewhere: refused now, not after the build
            srv.check_port(cfg.port)
        return True
    if (cfg.data_dir / "data" / "databases" / "neo4j").exists() and not replace:
        raise InputError(str(cfg.home), "has a database, and its server is not running, so whether it holds "
                         "data cannot be checked: start it (graphmem server start) or pass --replace")
    srv.check_port(cfg.port)
    return False


def _peak_rss_mb(pid: int) -> float:
    """A running process's peak resident memory (VmHWM), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _available_mb() -> int:
    """The machine's available memory (MemAvailable: free plus reclaimable cache), in MB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 4096  # not Linux: a small machine's worth


def _clamp(mb: float, low: int, high: int) -> str:
    return f"{int(max(low, min(high, mb)))}m"


@dataclass(frozen=True)
class Sizes:
    """The importer's memory (see the module docstring); :meth:`of_machine` chooses it
    from the machine's available memory."""

    importer_heap: str = "1g"
    importer_off_heap: str = "1g"

    @classmethod
    def of_machine(cls, available_mb: int | None = None) -> Sizes:
        """An eighth of the available memory for the heap (1-4 GiB) and a quarter off
        heap (1-16 GiB): a machine with 16 GiB available gives 2 GiB and 4 GiB."""
        mb = _available_mb() if available_mb is None else available_mb
        return cls(importer_heap=_clamp(mb / 8, 1024, 4096), importer_off_heap=_clamp(mb / 4, 1024, 16384))


def run_importer(data_dir: Path, files: ImportInput, *, heap: str = "1g", off_heap: str = "1g",
                 threads: int | None = None, log: Path | None = None) -> float:
    """``neo4j-admin database import full`` into ``data_dir`` (a launcher's data
    directory: the store of database ``neo4j`` goes to ``data_dir/data/databases``);
    return the importer JVM's peak resident memory in MB.

    The importer runs in the input's folder and is given the files' names alone: it
    splits a list of files at commas, so a home with a comma in its path would name
    files that are not there (its other paths are made absolute for that)."""
    jar = srv.build()
    data_dir = data_dir.absolute()
    conf = data_dir.parent / (data_dir.name + "-conf")
    conf.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    log = log or data_dir.parent / "import.log"
    cmd = [srv.java_path(), f"-Xmx{heap}", *srv.JVM_FLAGS, "-cp", str(jar), ADMIN_TOOL,
           # the database first: an option naming files takes every word after it
           "database", "import", "full", "neo4j", "--verbose", "--overwrite-destination=true",
           f"--max-off-heap-memory={off_heap}", f"--report-file={data_dir.parent / 'import.report'}",
           *([f"--threads={threads}"] if threads else []), *files.import_args(".")]
    env = {**os.environ, "NEO4J_HOME": str(data_dir), "NEO4J_CONF": str(conf)}
    pid_file = data_dir.parent / swap.IMPORTER_PID  # for the next run, should it outlive a kill of this one
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                cwd=files.folder, preexec_fn=srv.tied())
        pid_file.write_text(str(proc.pid))
        swap.checkpoint("import")
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    pid_file.unlink(missing_ok=True)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise ServerError(f"the importer failed (exit {proc.returncode}); log {log}:\n{tail}")
    return usage.ru_maxrss / 1024


def finish(mem: Memory) -> int:
    """On a server serving an imported database: what the importer cannot write, then
    the schema objects (``schema.fresh``: the imported data is in the current shape, so
    no data migration), every index populated. Returns the schema version."""
    mem.db.write(lambda tx: tx.one("bootstrap.entity_aliases"), "bootstrap.entity_aliases")
    mem.db.schema("bootstrap.key_flags")  # auto-commit: it commits in batches
    schema.apply(mem.db, schema.fresh())
    return schema.complete(mem.db)


def _finish(cfg: srv.ServerConfig, report: BootstrapReport) -> None:
    """``finish`` on a server started on the staging database ``cfg`` and tied to this
    process (its steps timed and its JVM's peak memory noted in ``report``), stopped
    after."""
    clock = time.monotonic()
    status = srv.start(cfg, tie=True)
    report.seconds["finish: start"] = time.monotonic() - clock
    swap.checkpoint("finish")
    try:
        clock = time.monotonic()
        with Memory(_driver(cfg.uri, cfg.password)) as mem:
            finish(mem)
        report.seconds["finish: migrate"] = time.monotonic() - clock
        report.peak_rss_mb["server"] = _peak_rss_mb(status.pid or 0)
    except BaseException:
        srv.stop(cfg)
        raise
    clock = time.monotonic()
    srv.stop(cfg)
    report.seconds["finish: stop"] = time.monotonic() - clock


class _Probe:
    """The database the search-text probe runs on (graphmem.probe): given, the target's
    running server, or a server started in the background on the staging folder."""

    def __init__(self, given: Database | None, target: str | None, password: str | None,
                 stage: srv.ServerConfig):
        self._given, self._target, self._password, self._stage = given, target, password, stage
        self._pool: ThreadPoolExecutor | None = None
        self._started: Future[Any] | None = None
        self._memory: Memory | None = None
        self._lock = threading.Lock()
        if given is None and target is None:
            self._pool = ThreadPoolExecutor(1)
            self._started = self._pool.submit(srv.start, stage, tie=True)

    def database(self) -> Database:
        with self._lock:
            if self._given is not None:
                return self._given
            if self._memory is None:
                if self._started is not None:
                    self._started.result()
                uri = self._target or self._stage.uri
                self._memory = Memory(_driver(uri, self._password if self._target else None))
            return self._memory.db

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
        if self._started is not None:
            try:
                self._started.result()
            finally:
                srv.stop(self._stage)
        if self._pool is not None:
            self._pool.shutdown()


def build_input(folder: Path, spool: Path, load: Callable[[Build], T],
                probe: Callable[[], Database]) -> tuple[T, Totals, ImportInput]:
    """What ``load`` writes into a Build, as the importer's input files in ``folder``
    (the build's spool in ``spool``, removed after)."""
    csv = GraphCsv(folder)
    build = Build(spool, csv, Templates(probe))
    try:
        result = load(build)
        totals = build.finish()
    finally:
        files = csv.close()
        shutil.rmtree(spool, ignore_errors=True)
    return result, totals, files


def export(folder: Path, load: Callable[[Build], T], *, root: str | None = None,
           probe: Database | None = None) -> tuple[T, Totals, ImportInput]:
    """The importer's input alone, for ``neo4j-admin database import`` run elsewhere (the
    neo4j Docker image, a cluster's seeding server): the CSV files in ``folder`` and
    ``folder/import.args``, the importer's arguments naming them under ``root``
    (where that importer will see the folder; by default where it is), for
    ``neo4j-admin database import full neo4j @import.args``. After the import, start the
    database and run ``finish`` on it (``graphmem bootstrap finish``). The search-text
    probe runs on ``probe``, else on a launcher started in a temporary folder."""
    work = Path(tempfile.mkdtemp(prefix="graphmem-export-"))
    stage = srv.ServerConfig(home=work / "probe-server", port=_free_port(), heap="512m", pagecache="64m")
    probing = _Probe(probe, None, None, stage)
    try:
        result, totals, files = build_input(folder, work / "spool", load, probing.database)
    finally:
        probing.close()
        shutil.rmtree(work, ignore_errors=True)
    (files.folder / "import.args").write_text(
        "\n".join(map(_quoted, files.import_args(f"{root.rstrip('/')}" if root else None))) + "\n")
    return result, totals, files


def _quoted(arg: str) -> str:
    """``arg`` as a line of neo4j-admin's ``@`` file, which splits lines at spaces and
    ends them at a ``#`` unless quoted: in double quotes, its own quotes and
    backslashes escaped (so a folder with a space in its path stays one argument)."""
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bootstrap(cfg: srv.ServerConfig, load: Callable[[Build], T], *, replace: bool = False,
              probe: Database | None = None, keep: bool = False, sizes: Sizes | None = None,
              say: Callable[[str], None] = lambda line: None) -> tuple[T, BootstrapReport]:
    """Build a new database from what ``load`` writes into a Build, and serve it from
    ``cfg``'s launcher (see the module docstring). ``probe``: a database for the
    search-text probe (tests pass theirs; nothing is written to it). ``sizes``: the
    importer's memory (by default ``Sizes.of_machine()``). ``say`` gets each line of
    what was done first to what a killed bootstrap left in the home (``swap.recover``;
    also in ``report.recovered``)."""
    sizes = sizes or Sizes.of_machine()
    started = time.monotonic()
    report = BootstrapReport(home=str(cfg.home), uri=cfg.uri)
    with swap.exclusive(cfg.home):
        for line in swap.recover(cfg):
            report.recovered.append(line)
            say(line)
        running = check_target(cfg, replace)
        report.replaced = running or cfg.data_dir.exists()
        staging = cfg.home / f"{swap.STAGING}{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        stage = srv.ServerConfig(home=staging / "server", port=_free_port(), heap=cfg.heap,
                                 pagecache=cfg.pagecache)
        try:
            result = _build_and_swap(cfg, stage, load, report, sizes, probe, running, keep, replace)
        finally:
            if keep:
                (staging / swap.KEPT_WORK).touch()
            elif not (cfg.home / swap.JOURNAL).exists():  # else it names the new database in there (an
                shutil.rmtree(staging, ignore_errors=True)  # interrupted swap): the next command completes it
    report.seconds["total"] = time.monotonic() - started
    return result, report


def _build_and_swap(cfg: srv.ServerConfig, stage: srv.ServerConfig, load: Callable[[Build], T],
                    report: BootstrapReport, sizes: Sizes, probe: Database | None, running: bool,
                    keep: bool, replace: bool) -> T:
    """Steps 2 to 5 of the module docstring, each timed in ``report``."""
    staging = stage.home.parent
    clock = time.monotonic()
    probing = _Probe(probe, srv.status(cfg).uri if running else None, cfg.password, stage)
    try:
        result, report.totals, files = build_input(staging / "csv", staging / "spool", load, probing.database)
    finally:
        probing.close()
    report.files = files.rows
    report.seconds["build"] = time.monotonic() - clock
    swap.checkpoint("build")
    clock = time.monotonic()
    report.memory = dataclasses.asdict(sizes)
    report.peak_rss_mb["importer"] = run_importer(stage.data_dir, files, heap=sizes.importer_heap,
                                                  off_heap=sizes.importer_off_heap)
    report.seconds["import"] = time.monotonic() - clock
    if not keep:
        shutil.rmtree(files.folder, ignore_errors=True)
    _finish(stage, report)
    clock = time.monotonic()
    # asked again: the home's lock keeps other bootstraps out, not `server start` and writes
    report.replaced = check_target(cfg, replace) or cfg.data_dir.exists()
    swap.replace(cfg, stage.data_dir)
    report.seconds["swap"] = time.monotonic() - clock
    return result
