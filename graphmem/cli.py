"""The ``graphmem`` command line: run the local Neo4j, migrate, and query the memory.

Exit codes: 0 success, 1 a graphmem error (bad input, not found, server fault),
2 a usage error. Errors print one line without a traceback unless ``--debug``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from . import server as srv
from .errors import GraphmemError
from .memory import Memory


class _Group(click.Group):
    """Turns graphmem errors into one clear line and exit code 1 (traceback with --debug)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GraphmemError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"graphmem: error: {exc}", err=True)
            sys.exit(1)


@click.group(cls=_Group)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """graphmem: a bitemporal knowledge-graph memory on Neo4j."""
    ctx.obj = {"debug": debug}


def _server_options(fn: Any) -> Any:
    fn = click.option("--home", type=click.Path(path_type=Path), default=None,
                      help="Data, log and pid folder (default $GRAPHMEM_HOME or ~/.graphmem).")(fn)
    fn = click.option("--port", type=int, default=7687, show_default=True, help="Bolt port.")(fn)
    return fn


def _config(home: Path | None, port: int, **extra: Any) -> srv.ServerConfig:
    return srv.ServerConfig(home=home or srv.default_home(), port=port, **extra)


@main.group()
def server() -> None:
    """Run Neo4j locally through the embedded launcher (no Docker needed)."""


@server.command("start")
@_server_options
@click.option("--heap", default="1g", show_default=True, help="JVM heap.")
@click.option("--pagecache", default="512m", show_default=True, help="Neo4j page cache.")
@click.option("--password", envvar="GRAPHMEM_NEO4J_PASSWORD", default=None,
              help="Turn auth on with this password for user neo4j (default: auth off).")
@click.option("--timeout", default=180.0, show_default=True, help="Seconds to wait for Bolt.")
def server_start(home: Path | None, port: int, heap: str, pagecache: str,
                 password: str | None, timeout: float) -> None:
    """Build the launcher if needed, start it, wait until Bolt answers."""
    cfg = _config(home, port, heap=heap, pagecache=pagecache, password=password)
    st = srv.start(cfg, timeout=timeout)
    click.echo(f"started pid {st.pid}: {st.uri} (home {cfg.home})")
    click.echo(f"export GRAPHMEM_NEO4J_URI={st.uri}")


@server.command("stop")
@_server_options
def server_stop(home: Path | None, port: int) -> None:
    """Stop the launcher recorded in the home folder (exactly its pid)."""
    cfg = _config(home, port)
    click.echo("stopped" if srv.stop(cfg) else "not running")


@server.command("status")
@_server_options
def server_status(home: Path | None, port: int) -> None:
    """Say whether the launcher runs; exit 3 when it does not."""
    st = srv.status(_config(home, port))
    if st.running:
        click.echo(f"running pid {st.pid}: {st.uri} (home {st.home})")
    else:
        click.echo(f"not running (home {st.home})")
        sys.exit(3)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def migrate(as_json: bool) -> None:
    """Apply the schema to the database at $GRAPHMEM_NEO4J_URI and show it."""
    with Memory.from_env() as mem:
        mem.migrate()
        info = mem.server_info()
    if as_json:
        click.echo(json.dumps(info, default=str, indent=2))
        return
    click.echo(f"{info.get('name')} {info.get('version')} {info.get('edition')}; "
               f"graphmem schema version {info['schema_version']}")
    for row in info["schema"]:
        click.echo(f"  {row['name']:32} {row['type']:10} {','.join(row['labels'] or [])}"
                   f"({','.join(row['properties'] or [])}) {row['state']}")


def _ensure_server() -> Memory:
    """$GRAPHMEM_NEO4J_URI if set, else the local launcher (started if it is not running)."""
    import os

    if os.environ.get("GRAPHMEM_NEO4J_URI"):
        return Memory.from_env()
    cfg = srv.ServerConfig()
    st = srv.status(cfg)
    if not st.running:
        click.echo(f"starting Neo4j (embedded launcher, home {cfg.home}) ...", err=True)
        st = srv.start(cfg)
    return Memory.connect(st.uri or cfg.uri)


@main.command()
def demo() -> None:
    """The main job: make sure Neo4j runs, migrate, and show the server and schema."""
    with _ensure_server() as mem:
        mem.migrate()
        info = mem.server_info()
    click.echo(f"{info.get('name')} {info.get('version')} {info.get('edition')}; "
               f"graphmem schema version {info['schema_version']}, "
               f"{len(info['schema'])} constraints and indexes")
