"""One real Neo4j per test session, chosen by one rule, and a fresh tenant per test.

Choice: ``GRAPHMEM_NEO4J_URI`` if set (user/password from ``GRAPHMEM_NEO4J_USER`` /
``GRAPHMEM_NEO4J_PASSWORD``); else testcontainers' Neo4j module if a Docker daemon
answers; else the embedded launcher (docker/launcher) in a temporary folder on a
free port. The database is never mocked.

Isolation: Community has one user database, so each test gets its own tenant
(a random ``Scope``). graphmem never lets a read cross tenants, so tests cannot see
each other's data, and nothing has to be deleted between tests — which keeps the
suite fast and also exercises scope isolation on every test.
"""

from __future__ import annotations

import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from graphmem import Memory, Scope
from graphmem import server as srv


@dataclass
class Neo4jServer:
    uri: str
    auth: tuple[str, str] | None
    kind: str  # "env", "testcontainers" or "launcher"
    config: srv.ServerConfig | None = None  # only for the launcher: lets tests restart it

    def connect(self, **options) -> Memory:
        return Memory.connect(self.uri, self.auth, **options)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _docker_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no usable daemon"
        return False


@pytest.fixture(scope="session")
def neo4j_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neo4jServer]:
    uri = os.environ.get("GRAPHMEM_NEO4J_URI")
    if uri:
        password = os.environ.get("GRAPHMEM_NEO4J_PASSWORD")
        auth = (os.environ.get("GRAPHMEM_NEO4J_USER", "neo4j"), password) if password else None
        yield Neo4jServer(uri, auth, "env")
        return
    if _docker_answers():
        from testcontainers.neo4j import Neo4jContainer

        with Neo4jContainer("neo4j:5.26-community", password="graphmem-test") as container:
            yield Neo4jServer(container.get_connection_url(), ("neo4j", "graphmem-test"),
                              "testcontainers")
        return
    home = Path(tmp_path_factory.mktemp("neo4j"))
    config = srv.ServerConfig(home=home, port=_free_port(), heap="2g", pagecache="512m")  # each worker its own
    srv.start(config)
    try:
        yield Neo4jServer(config.uri, None, "launcher", config)
    finally:
        srv.stop(config)


@pytest.fixture(scope="module")
def short_lived_jvms() -> Iterator[None]:
    """The JVMs this module's tests start (launchers that live for a test, the importer,
    Maven) compile with C1 only (JAVA_TOOL_OPTIONS, which every JVM reads): a start and
    migration costs about half the CPU (measured: 18-20 s against 27-36 s of the JVM's
    CPU), and their queries are few. The session's server, a session fixture,
    is started before any module fixture and keeps the full compiler. Nor do their
    starts warm plans (GRAPHMEM_WARM=0: a detached warmer runs a minute or more of CPU
    beside the tests; tests/test_server.py checks the default)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")
        patch.setenv("GRAPHMEM_WARM", "0")
        yield


@pytest.fixture
def restartable(short_lived_jvms, tmp_path: Path) -> Iterator[Neo4jServer]:
    """A launcher of the test's own, migrated, for a test that stops or kills its server:
    the session's server then keeps its plans and compiled code (restarted, it made every
    later test of its worker plan its statements again on a cold JVM)."""
    if not (shutil.which("mvn") and shutil.which("java")):
        pytest.skip("needs Maven and Java: the launcher is the server a test can restart")
    config = srv.ServerConfig(home=tmp_path / "neo4j", port=_free_port(), heap="512m", pagecache="64m")
    srv.start(config, tie=True)
    try:
        server = Neo4jServer(config.uri, None, "launcher", config)
        with server.connect() as mem:
            mem.migrate()
        yield server
    finally:
        srv.stop(config)


@pytest.fixture(scope="session")
def migrated(neo4j_server: Neo4jServer) -> Neo4jServer:
    with neo4j_server.connect() as mem:
        mem.migrate()
    return neo4j_server


@pytest.fixture
def mem(migrated: Neo4jServer) -> Iterator[Memory]:
    with migrated.connect() as memory:
        yield memory


@pytest.fixture
def scope() -> Scope:
    """A tenant of this test's own."""
    return Scope(tenant=f"test-{uuid.uuid4().hex[:12]}")
