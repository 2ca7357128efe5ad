"""Start, stop and inspect the embedded Neo4j launcher (docker/launcher) on this machine.

The launcher is a Maven project that runs Neo4j 5.26 Community through the embedded
API with Bolt on 127.0.0.1. ``start`` builds it once (the jar is rebuilt only when
its pom or sources are newer), starts it in its own process group, waits until Bolt
answers and records its pid in ``<home>/launcher.pid``; ``stop`` signals exactly that
pid (after checking it is still our launcher for that data directory) and waits for
a clean shutdown. Nothing is ever stopped by process name.
"""

from __future__ import annotations

import ctypes
import errno
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import neo4j
from neo4j.exceptions import AuthError, DriverError, Neo4jError

from .errors import InputError, ServerError

try:
    import fcntl
except ImportError:  # Windows has no flock: concurrent first builds there are not serialised
    fcntl = None

JAR_NAME = "graphmem-launcher.jar"
JVM_FLAGS = (
    # Neo4j's page cache and native I/O reach into these JDK internals.
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "-XX:+UseG1GC",
    "-Dfile.encoding=UTF-8",
)
READY = "graphmem-launcher: ready on "  # the launcher's line once Bolt answers with its password set
MIN_PASSWORD = 8  # Neo4j refuses a shorter one (dbms.security.auth_minimum_password_length)


def default_home() -> Path:
    """``$GRAPHMEM_HOME``, else ``~/.graphmem``: where the data, log and pid file live."""
    return Path(os.environ.get("GRAPHMEM_HOME", Path.home() / ".graphmem")).expanduser()


def launcher_dir() -> Path:
    """The launcher's Maven project: ``$GRAPHMEM_LAUNCHER_DIR`` or the checkout's docker/launcher."""
    explicit = os.environ.get("GRAPHMEM_LAUNCHER_DIR")
    path = Path(explicit) if explicit else Path(__file__).resolve().parents[1] / "docker" / "launcher"
    if not (path / "pom.xml").is_file():
        raise ServerError(
            f"launcher sources not found at {path}; run from a graphmem checkout or set "
            "GRAPHMEM_LAUNCHER_DIR to its docker/launcher folder"
        )
    return path


@dataclass(frozen=True)
class ServerConfig:
    """Everything one launcher instance needs; one instance per data directory."""

    home: Path = field(default_factory=default_home)
    port: int = 7687
    heap: str = "1g"
    pagecache: str = "512m"
    password: str | None = None
    #: seconds a transaction that names no timeout may run (graphmem's own name theirs:
    #: ``graphmem.Timeouts``), and a lock wait may last before a transient, retried error
    tx_timeout: float = 120.0
    lock_timeout: float = 20.0

    def __post_init__(self) -> None:
        for name in ("tx_timeout", "lock_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InputError(name, f"seconds must be a finite number >= 0, got {value!r}")
        if self.password and len(self.password) < MIN_PASSWORD:
            # the launcher would fail to set it while its JVM serves on, auth on, password unset
            raise InputError("password", f"Neo4j requires at least {MIN_PASSWORD} characters, got {len(self.password)}")

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.home / "launcher.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "launcher.log"

    @property
    def data_dir(self) -> Path:
        return self.home / "neo4j"


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    uri: str | None
    home: Path

    @property
    def port(self) -> int | None:
        """The Bolt port the running server was started on (None: not running)."""
        return int(self.uri.rpartition(":")[2]) if self.uri else None


def build(source: Path | None = None) -> Path:
    """Build the launcher jar with Maven unless an up-to-date one is there; return its path.

    Two processes starting a server at once (two shells, parallel test workers) would run
    two Maven builds into one ``target`` folder; an exclusive lock on a file beside the pom
    makes the second wait and then find the jar fresh.
    """
    source = source or launcher_dir()
    with open(source / ".build.lock", "a") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(source)


def _build_locked(source: Path) -> Path:
    jar = source / "target" / JAR_NAME
    inputs = [source / "pom.xml", *(source / "src").rglob("*.java")]
    fresh = jar.is_file() and (source / "target" / "lib").is_dir()
    if fresh and jar.stat().st_mtime >= max(p.stat().st_mtime for p in inputs):
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServerError("Maven (mvn) is not on PATH; install it to build the Neo4j launcher")
    proc = subprocess.run(
        [mvn, "-B", "-q", "package"], cwd=source, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0 or not jar.is_file():
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise _noted(ServerError(f"Maven build of the launcher failed in {source} (its last "
                                 "lines: graphmem --debug)"), tail)
    return jar


def java_path() -> str:
    """The java to run Neo4j with: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    java = shutil.which("java", path=str(Path(home) / "bin")) if home else shutil.which("java")
    if java is None:
        raise ServerError("no java found (JAVA_HOME or PATH); Neo4j 5.26 needs Java 17 or 21")
    return java


def _read_pid(cfg: ServerConfig) -> int | None:
    try:
        return int(json.loads(cfg.pid_file.read_text())["pid"])
    except (FileNotFoundError, ValueError, KeyError, json.JSONDecodeError):
        return None


def _is_our_launcher(pid: int, cfg: ServerConfig) -> bool:
    """True if ``pid`` is alive and is a launcher for this data directory (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    wanted = f"-Dgraphmem.home={cfg.data_dir.resolve()}".encode()
    return wanted in cmdline and any(arg.endswith(JAR_NAME.encode()) for arg in cmdline)


def status(cfg: ServerConfig) -> ServerStatus:
    pid = _read_pid(cfg)
    running = pid is not None and _is_our_launcher(pid, cfg)
    uri = None
    if running:
        uri = json.loads(cfg.pid_file.read_text()).get("uri")
    return ServerStatus(running=running, pid=pid if running else None, uri=uri, home=cfg.home)


def _noted(error: ServerError, tail: str) -> ServerError:
    """``error`` with the last lines of a log as a note: a traceback (``graphmem
    --debug``) shows them, the message stays one line."""
    error.add_note(tail)
    return error


def _log_tail(cfg: ServerConfig, lines: int = 30) -> str:
    try:
        return "\n".join(cfg.log_file.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log written)"


def wait_for_bolt(uri: str, auth: tuple[str, str] | None, timeout: float) -> None:
    """Block until a Bolt handshake and a query succeed at ``uri``, or raise ServerError."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with neo4j.GraphDatabase.driver(uri, auth=auth, connection_timeout=2) as driver:
                driver.verify_connectivity()
                return
        except AuthError:
            raise
        except (DriverError, Neo4jError, OSError) as exc:
            last = exc
            time.sleep(0.5)
    raise ServerError(f"Bolt at {uri} did not answer within {timeout:.0f}s: {last}")


def listening(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, or graphmem's one-line error for a port that
    is taken (listening at once: two processes may both bind a port, only one listen).
    SO_REUSEADDR: closed connections still waiting out TIME_WAIT do not count, only a
    live listener."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen()
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServerError(f"port {port} on {host} is in use by another process; choose another --port") from exc
        raise ServerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def check_port(port: int, host: str = "127.0.0.1") -> None:
    """graphmem's error (see :func:`listening`) if ``host:port`` cannot be listened on."""
    listening(host, port).close()


def _port_free(port: int) -> bool:
    """Can a listener take 127.0.0.1:``port``?"""
    try:
        check_port(port)
    except ServerError:
        return False
    return True


def tied() -> Callable[[], None] | None:
    """A ``preexec_fn`` that ties a child process's life to this process: on Linux the
    kernel sends it SIGKILL when this process (the thread that started it) dies
    (``PR_SET_PDEATHSIG``), and it exits at once if this process died before the tie was
    made. None elsewhere (a killed bootstrap's children are then stopped by the next one)."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def tie() -> None:  # runs in the child, between fork and exec
        prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)

    return tie


def start(cfg: ServerConfig, timeout: float = 180.0, *, tie: bool = False, warm: bool = False) -> ServerStatus:
    """Build if needed, start the launcher in the background and wait for Bolt. ``tie``:
    the launcher dies with this process (a bootstrap's staging server: :func:`tied`);
    otherwise it outlives it. ``warm``: then make graphmem's usual first calls on it in
    a process of its own (graphmem.warm), so that this returns at once; unless
    ``$GRAPHMEM_WARM`` is ``0`` (a CI job, a script: every start skips it)."""
    current = status(cfg)
    if current.running:
        raise ServerError(
            f"a graphmem Neo4j is already running for {cfg.home} (pid {current.pid}, {current.uri})"
        )
    cfg.pid_file.unlink(missing_ok=True)  # stale: its process is gone
    if not _port_free(cfg.port):
        # Bolt answering there would pass for ours: a demo or test would then write
        # into someone else's database.
        raise ServerError(
            f"port {cfg.port} on 127.0.0.1 is already in use (another Neo4j?); stop it, "
            "or choose another port (--port), or point GRAPHMEM_NEO4J_URI at it"
        )
    jar = build()
    java = java_path()
    cfg.home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.pop("GRAPHMEM_NEO4J_PASSWORD", None)
    if cfg.password:
        env["GRAPHMEM_NEO4J_PASSWORD"] = cfg.password
    cmd = [
        java,
        f"-Xms{cfg.heap}",
        f"-Xmx{cfg.heap}",
        *JVM_FLAGS,
        f"-Dgraphmem.home={cfg.data_dir.resolve()}",
        f"-Dgraphmem.port={cfg.port}",
        f"-Dgraphmem.pagecache={cfg.pagecache}",
        f"-Dgraphmem.tx_timeout={cfg.tx_timeout:g}",
        f"-Dgraphmem.lock_timeout={cfg.lock_timeout:g}",
        "-jar",
        str(jar),
    ]
    with open(cfg.log_file, "ab") as log:
        offset = log.tell()  # where this launcher's lines begin
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True, preexec_fn=tied() if tie else None,
        )
    cfg.pid_file.write_text(json.dumps({"pid": proc.pid, "uri": cfg.uri, "port": cfg.port}))
    auth = ("neo4j", cfg.password) if cfg.password else None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            cfg.pid_file.unlink(missing_ok=True)
            raise _noted(ServerError(
                f"the launcher exited with code {proc.returncode} before Bolt answered; "
                f"log {cfg.log_file}"), _log_tail(cfg))
        if auth and not _ready(cfg, offset):
            time.sleep(0.2)
            continue
        try:
            wait_for_bolt(cfg.uri, auth, timeout=2)
        except ServerError:
            continue
        if warm and os.environ.get("GRAPHMEM_WARM") != "0":
            _warm(cfg, env)
        return status(cfg)
    _terminate(proc.pid, 30)
    cfg.pid_file.unlink(missing_ok=True)
    raise _noted(ServerError(f"Bolt did not answer on {cfg.uri} within {timeout:.0f}s; "
                             f"log {cfg.log_file}"), _log_tail(cfg))


def _ready(cfg: ServerConfig, offset: int) -> bool:
    """Whether the launcher whose lines begin at ``offset`` of the log said it is ready.
    With auth on it sets the password only after Bolt opens: trying it before that is
    refused (an AuthError), and Neo4j then locks the user for a while."""
    try:
        with open(cfg.log_file, "rb") as log:
            log.seek(offset)
            return READY.encode() in log.read()
    except FileNotFoundError:
        return False


WARMING = "graphmem-warm: making graphmem's first calls in the background, pid "


def _warm(cfg: ServerConfig, env: dict[str, str]) -> None:
    """``python -m graphmem.warm`` on ``cfg``'s server, detached: it outlives this process
    and ends once the plans are made. The launcher's log names it (why the CPU is busy
    after a start), then holds its line of seconds per call, or its error."""
    with open(cfg.log_file, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "graphmem.warm", cfg.uri], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
        log.write(f"{WARMING}{proc.pid}\n".encode())


def _terminate(pid: int, timeout: float) -> None:
    """SIGTERM ``pid`` (a clean Neo4j shutdown), then SIGKILL if it outlives ``timeout``."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
            if finished == pid:
                return
        except ChildProcessError:
            pass
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)


def stop(cfg: ServerConfig, timeout: float = 60.0) -> bool:
    """Stop the launcher recorded for ``cfg.home``; return False if none was running."""
    current = status(cfg)
    if not current.running or current.pid is None:
        cfg.pid_file.unlink(missing_ok=True)
        return False
    _terminate(current.pid, timeout)
    cfg.pid_file.unlink(missing_ok=True)
    return True
