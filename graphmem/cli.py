"""The ``graphmem`` command line: run the local Neo4j, migrate, and query the memory.

Exit codes: 0 success, 1 an error (bad input, not found, a server fault, retries
exhausted), 2 a usage error, 3 no server (``server status``), 4 nothing found (``asof``,
``screen``), 5 a universe load that left something out (``load edgar``, ``bootstrap
edgar``: a company failed or was not found, or a member of the inputs was unreadable;
the rest loaded, the report names each). Every error prints ONE line on stderr naming
what failed and where (a load: the file, and the filing whose write failed); ``--debug``
shows the traceback instead (and the retries of transient faults, which otherwise print
nothing).
Values from stored data or input are shown through ``render.printable`` (control
characters escaped).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import logging
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from . import export, render
from . import server as srv
from .db import RetryPolicy, Timeouts
from .errors import GraphmemError, InputError, ServerError
from .memory import Memory
from .models import Period, Scope
from .values import parse_time


def error_line(exc: BaseException, where: str | None = None, named: str | None = None) -> str:
    """The one line an error prints: ``graphmem: error: <where>: <what>``.

    A message's own line breaks (a driver's two-line reason, a server's query excerpt)
    become spaces and control characters are escaped, so it is one line whatever the
    data held. ``where`` (``load kpi FILE``) is left out when the message already
    names ``named`` (the file: a loader's input error does).
    """
    if isinstance(exc, GraphmemError):
        what = str(exc)
    elif isinstance(exc, ValidationError):
        what = f"{exc.title}: " + "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors())
    elif isinstance(exc, OSError):
        what = str(exc)
    else:
        what = f"unexpected {type(exc).__name__}: {exc} (a bug? `graphmem --debug ...` shows where)"
    lines = what.replace("\r\n", "\n").split("\n")
    what = render.printable(" ".join(line.strip() for line in lines if line.strip()))
    if where and render.printable(named or where) not in what:
        what = f"{render.printable(where)}: {what}"
    return f"graphmem: error: {what}"


class _Group(click.Group):
    """Turns every error into one line on stderr and exit code 1 (traceback with --debug);
    click's own usage errors keep their exit code 2, and so does an input error about the
    command's options (:func:`in_options`)."""

    group_class = type  # its subgroups (load, server, bootstrap) are _Groups too

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name, cmd, rest = super().resolve_command(ctx, args)
        ctx.meta["graphmem.command"] = cmd  # shared down the chain: the innermost wins
        return name, cmd, rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # `graphmem migrate | head -3`: the reader has gone; say nothing
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            sys.exit(1)
        except Exception as exc:
            obj = ctx.obj or {}
            if obj.get("debug"):
                raise
            usage = in_options(exc, ctx.meta.get("graphmem.command")) if isinstance(exc, InputError) else None
            click.echo(error_line(usage or exc, obj.get("where"), obj.get("named")), err=True)
            sys.exit(2 if usage else 1)


def in_options(exc: InputError, command: click.Command | None) -> InputError | None:
    """An input error in the command line's words, when it is about the command's options:
    an argument the command passes on (``frame``, ``source_id=``) named by its option
    (``--frame``, ``--source``) - the API's errors name its own arguments. None when the
    error names no option (a file's row, the data): not a usage error."""
    options = [(p.name, max(p.opts, key=len)) for p in (command.params if command else ())
               if isinstance(p, click.Option) and p.name]
    # by the parameter's name (source_id) and the option's own (--frames takes frames_text)
    names = {**{opt[2:].replace("-", "_"): opt for _, opt in options}, **dict(options)}
    where = names.get(exc.where, exc.where)
    if exc.where.startswith("--"):  # said in the command line's words already: its text is left as it is
        return exc
    # source_id= -> --source; latest='instant' -> --latest 'instant' (the option, then its value)
    reason = re.sub(r"(?<![\w-])(\w+)=(?=(['\"\w]?))",
                    lambda m: names[m[1]] + (" " if m[2] else "") if m[1] in names else m[0], exc.reason)
    if not where.startswith("--") and reason == exc.reason:
        return None
    return InputError(where, reason)


def _quiet_logs(debug: bool) -> None:
    """Retries and the driver's own reports of a fault reach stderr only with --debug:
    without it an error is one line, and a fault retried to success prints nothing."""
    for name in ("graphmem", "neo4j"):
        logging.getLogger(name).setLevel(logging.WARNING if debug else logging.CRITICAL)


@click.group(cls=_Group)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """graphmem: a bitemporal knowledge-graph memory on Neo4j."""
    ctx.obj = {"debug": debug}
    _quiet_logs(debug)


def _server_options(fn: Any) -> Any:
    fn = click.option("--home", type=click.Path(path_type=Path), default=None,
                      help="Data, log and pid folder (default $GRAPHMEM_HOME or ~/.graphmem).")(fn)
    fn = click.option("--port", type=click.IntRange(1, 65535), default=7687, show_default=True,
                      help="Bolt port.")(fn)
    return fn


def _config(home: Path | None, port: int, **extra: Any) -> srv.ServerConfig:
    return srv.ServerConfig(home=home or srv.default_home(), port=port, **extra)


def _recovered(cfg: srv.ServerConfig) -> srv.ServerConfig:
    """``cfg``, once what a killed bootstrap left in its home is dealt with (said on stderr)."""
    from . import swap

    for line in swap.recover(cfg):
        click.echo(f"graphmem: {line}", err=True)
    return cfg


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
@click.option("--tx-timeout", type=click.FloatRange(min=0), default=120.0, show_default=True,
              help="Seconds a transaction that names no timeout may run (0: no limit).")
@click.option("--lock-timeout", type=click.FloatRange(min=0), default=20.0, show_default=True,
              help="Seconds a lock wait may last before a transient (retried) error.")
@click.option("--warm/--no-warm", default=True, show_default=True,
              help="Make graphmem's usual first calls (in tenants of their own, writing nothing) in a "
                   "background process once Bolt answers, so that their plans are made before yours "
                   "(it competes for CPU for a minute or so: skip it for a short scripted job).")
def server_start(home: Path | None, port: int, heap: str, pagecache: str,
                 password: str | None, timeout: float, tx_timeout: float, lock_timeout: float,
                 warm: bool) -> None:
    """Build the launcher if needed, start it, wait until Bolt answers."""
    cfg = _recovered(_config(home, port, heap=heap, pagecache=pagecache, password=password,
                             tx_timeout=tx_timeout, lock_timeout=lock_timeout))
    st = srv.start(cfg, timeout=timeout, warm=warm)
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
    """Say whether the launcher runs, and what replaced databases are kept; exit 3 when
    it does not run."""
    from . import swap

    cfg = _recovered(_config(home, port))
    st = srv.status(cfg)
    click.echo(f"running pid {st.pid}: {st.uri} (home {st.home})" if st.running else f"not running (home {st.home})")
    for copy in swap.kept(cfg):
        click.echo(f"{copy.line()}; `graphmem server prune` deletes it")
    sys.exit(0 if st.running else 3)


@server.command("prune")
@_server_options
def server_prune(home: Path | None, port: int) -> None:
    """Delete the kept copies of replaced databases and the staging folders kept with
    --keep-work (what `server status` lists as kept)."""
    from . import swap

    gone = swap.prune(_recovered(_config(home, port)))
    click.echo("\n".join(f"deleted {copy.line().removeprefix('kept: ')}" for copy in gone) or "nothing kept")


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



# ---------------------------------------------------------------- connection and scope


_BOLT_SCHEMES = ("bolt", "neo4j", "bolt+s", "neo4j+s", "bolt+ssc", "neo4j+ssc")


def _connect(start: bool = False) -> Memory:
    """$GRAPHMEM_NEO4J_URI if set; else the local launcher of $GRAPHMEM_HOME (started when
    ``start``), with the password `server start` was given through $GRAPHMEM_NEO4J_PASSWORD.
    Retries and timeouts from the environment either way (see ``Memory.from_env``)."""
    uri = os.environ.get("GRAPHMEM_NEO4J_URI")
    if uri:
        scheme = uri.partition("://")[0] if "://" in uri else ""
        if scheme not in _BOLT_SCHEMES:
            raise InputError("GRAPHMEM_NEO4J_URI", f"{uri!r}: expected bolt://HOST:PORT or neo4j://HOST "
                                                   f"(also {', '.join(s for s in _BOLT_SCHEMES if '+' in s)})")
        return Memory.from_env()
    retry, timeouts = RetryPolicy.from_env(), Timeouts.from_env()
    cfg = srv.ServerConfig()
    st = srv.status(cfg)
    if not st.running:
        if not start:
            raise ServerError("no Neo4j: set GRAPHMEM_NEO4J_URI or run `graphmem server start`")
        click.echo(f"starting Neo4j (embedded launcher, home {cfg.home}) ...", err=True)
        st = srv.start(_recovered(cfg), warm=True)
    password = os.environ.get("GRAPHMEM_NEO4J_PASSWORD")  # as `server start` used it
    auth = (os.environ.get("GRAPHMEM_NEO4J_USER", "neo4j"), password) if password else None
    return Memory.connect(st.uri or cfg.uri, auth, retry=retry, timeouts=timeouts,
                          embedder=os.environ.get("GRAPHMEM_EMBEDDER") or None)


def _scope(tenant: str, keys: tuple[str, ...]) -> Scope:
    """The scope of --tenant and --scope KEY=VALUE; a bad one is a usage error naming
    the option (not the model's field): an empty tenant, a key given twice, ``tenant=``,
    a bound exceeded."""
    if not tenant.strip():
        raise InputError("--tenant", "must be a non-empty string")
    extra: dict[str, str] = {}
    for item in keys:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise InputError("--scope", f"expected KEY=VALUE, got {item!r}")
        if key == "tenant":
            raise InputError("--scope", "the tenant is given by --tenant, not as a scope key")
        if key in extra and extra[key] != value:
            raise InputError("--scope", f"key {key!r} given twice: {extra[key]!r} and {value!r}")
        extra[key] = value
    try:
        return Scope(tenant=tenant, **extra)
    except InputError as exc:  # a bound: too many keys, too long a tenant or scope
        raise InputError("--tenant" if exc.where.endswith("tenant") else "--scope", exc.reason) from exc


def _loading(what: str, file: Path) -> None:
    """Name the file of a load in any error it ends with (the filing is named by the
    error itself: a filing's write is labelled with its source)."""
    click.get_current_context().obj.update(where=f"load {what} {file}", named=str(file))


def _scoped(fn: Any) -> Any:
    fn = click.option("--scope", "scope_keys", multiple=True, metavar="KEY=VALUE",
                      help="Scope keys beside the tenant (repeatable).")(fn)
    fn = click.option("--tenant", envvar="GRAPHMEM_TENANT", default="default", show_default=True,
                      help="Tenant ($GRAPHMEM_TENANT).")(fn)
    return fn


def _json_opt(fn: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(fn)


def _period(text: str | None) -> Period | None:
    """``2015-12-31`` (an instant) or ``2025-01-01..2025-03-31`` (a duration)."""
    return Period.parse(text, "--period") if text else None


def _dump(obj: Any) -> None:
    click.echo(json.dumps(obj, default=str, indent=2))


# ---------------------------------------------------------------- load


@main.group()
def load() -> None:
    """Load filings into the memory as sources and fact versions."""


def _in_a_folder(ctx: click.Context, param: click.Parameter, path: Path | None) -> Path | None:
    """A file an option writes: its folder must exist, said naming the option before
    anything is read or written (not the OS's error once the load has begun)."""
    if path is not None and not path.parent.is_dir():
        raise InputError(param.opts[0], f"{path}: no such folder: {path.parent}")
    return path


_QUARANTINE = click.option("--quarantine", "quarantine_file", type=click.Path(dir_okay=False, path_type=Path),
                           callback=_in_a_folder, help="Write every quarantined row to this file (JSON Lines).")


def _companyfacts_options(fn: Any) -> Any:
    """One company's files and the quarantine report, for `load companyfacts` and
    `bootstrap companyfacts`."""
    fn = _QUARANTINE(fn)
    fn = click.option("--submissions", type=click.Path(exists=True, dir_okay=False, path_type=Path), multiple=True,
                      help="The company's submissions JSON (acceptance times); repeat it for its paged files.")(fn)
    return click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))(fn)


@load.command("companyfacts")
@_companyfacts_options
@_scoped
@_json_opt
def load_companyfacts(file: Path, submissions: tuple[Path, ...], quarantine_file: Path | None, tenant: str,
                      scope_keys: tuple[str, ...], as_json: bool) -> None:
    """Load an SEC companyfacts JSON file (idempotent; one transaction per filing)."""
    from .loaders import sec

    _loading("companyfacts", file)
    with _connect() as mem, _quarantine(quarantine_file) as sink:
        mem.migrate()
        report = sec.load(mem, _scope(tenant, scope_keys), file, list(submissions), quarantine=sink)
    _dump(report.model_dump()) if as_json else click.echo(render.load_report(report))


@contextlib.contextmanager
def _quarantine(path: Path | None) -> Any:
    """The JSON Lines sink of --quarantine FILE (None without it)."""
    if path is None:
        yield None
        return
    from .loaders.quarantine import JsonLines

    try:
        sink = JsonLines(path)
    except OSError as exc:  # a folder it cannot write in, a folder by that name ...
        raise InputError("--quarantine", f"{path}: cannot be written: {exc.strerror or exc}") from exc
    with sink:
        yield sink


def _items(values: tuple[str, ...]) -> list[str]:
    """Repeated and comma-separated option values, as one list."""
    return [part for value in values for part in value.split(",") if part.strip()]


def _universe_options(fn: Any) -> Any:
    """The inputs and the universe selection of `load edgar` and `bootstrap edgar`."""
    fn = _QUARANTINE(fn)
    fn = click.option("--company-tickers", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                      help="The SEC's company_tickers.json, to find the CIKs of --tickers.")(fn)
    fn = click.option("--tickers", multiple=True, metavar="TICKER[,TICKER...]",
                      help="Load only these tickers' companies (needs --company-tickers).")(fn)
    fn = click.option("--ciks-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                      help="Load only the CIKs in this file (one per line; blank lines and # comments skipped).")(fn)
    fn = click.option("--cik", "ciks", multiple=True, metavar="CIK[,CIK...]", help="Load only these companies.")(fn)
    fn = click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))(fn)
    return fn


def _lines(path: Path, option: str) -> list[str]:
    """The lines of a UTF-8 file an option names (``-``: stdin), stripped, without blank
    lines and ``#`` comments.

    Lines end at a newline (``\n`` or ``\r\n``) and nowhere else: ``str.splitlines``
    would also cut at a vertical tab, a form feed or a line separator inside a value."""
    try:
        data = path.read_bytes() if str(path) != "-" else sys.stdin.buffer.read()
        text = data.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(option, f"{path}: cannot read it as UTF-8 text: {exc}") from exc
    lines = (line.strip() for line in text.split("\n"))
    return [line for line in lines if line and not line.startswith("#")]


@contextlib.contextmanager
def _universe(paths: tuple[Path, ...], ciks: tuple[str, ...], ciks_file: Path | None, tickers: tuple[str, ...],
              company_tickers: Path | None) -> Any:
    """The companies the options select from the inputs and the members skipped as
    unreadable (the inputs open while in use). Nothing to load is an error, before
    anything is written."""
    from .loaders import universe

    wanted = universe.parse_ciks(_items(ciks), "--cik") if ciks else None
    if ciks_file is not None:
        wanted = (wanted or []) + universe.parse_ciks(_lines(ciks_file, "--ciks-file"), str(ciks_file))
    with universe.discover(paths) as found:
        chosen = universe.select(found, ciks=wanted, tickers=_items(tickers) if tickers else None,
                                 tickers_file=company_tickers)
        if not any(company.facts for company in chosen):
            absent = f" (asked for: {_ciks_named(chosen)})" if chosen else ""
            raise InputError(", ".join(map(str, paths)),
                             f"nothing to load: no companyfacts file in the inputs for the companies selected{absent}")
        yield chosen, found.skipped


def _ciks_named(companies: list[Any], most: int = 10) -> str:
    """``CIK 1, CIK 2 ...``: the first ``most`` companies of a message."""
    return ", ".join(f"CIK {c.cik}" for c in companies[:most]) + (" ..." if len(companies) > most else "")


PARTIAL = 5  # the exit code of a universe load that left something out


def _left_out(report: Any) -> str:
    """What a universe load left out, in one line: failed or missing companies and
    unreadable members ("" when nothing)."""
    bad, skipped = report.not_loaded, report.skipped
    parts = []
    if bad:
        parts.append(f"{len(bad)} of {len(report.companies)} companies not loaded: "
                     + ", ".join(f"CIK {c.cik} ({c.status})" for c in bad[:10]) + (" ..." if len(bad) > 10 else ""))
    if skipped:
        parts.append(f"{len(skipped)} unreadable file(s) skipped: " + ", ".join(
            f"{s.file} ({s.reason})" for s in skipped[:10]) + (" ..." if len(skipped) > 10 else ""))
    return "; ".join(parts)


def _none_loaded(command: str, report: Any) -> None:
    """An error when no company of a universe load loaded completely."""
    if len(report.not_loaded) == len(report.companies):
        raise InputError(command, _left_out(report))


def _universe_done(command: str, report: Any) -> None:
    """Name what a universe load left out, in one line on stderr. Exit 1 (an error) when
    no company loaded completely, else exit 5 (the others loaded)."""
    left_out = _left_out(report)
    if not left_out:
        return
    _none_loaded(command, report)
    click.echo(render.printable(f"graphmem: incomplete: {command}: {left_out}"), err=True)
    sys.exit(PARTIAL)


@load.command("edgar")
@_universe_options
@click.option("--no-resume", is_flag=True,
              help="Write every filing again (the write path's idempotency keeps the graph as it is).")
@_scoped
@_json_opt
def load_edgar(paths: tuple[Path, ...], ciks: tuple[str, ...], ciks_file: Path | None, tickers: tuple[str, ...],
               company_tickers: Path | None, quarantine_file: Path | None, no_resume: bool, tenant: str,
               scope_keys: tuple[str, ...], as_json: bool) -> None:
    """Load a universe of SEC companies: the bulk archives companyfacts.zip and
    submissions.zip (read without unpacking), folders of CIK##########.json files, or
    single files. Resumable: a re-run skips what is recorded. A company that fails, or a
    member that is not EDGAR JSON, is named in the report and the rest loads: exit 5
    then (exit 1 when no company loaded completely)."""
    from .loaders import edgar

    scope = _scope(tenant, scope_keys)
    with _universe(paths, ciks, ciks_file, tickers, company_tickers) as (chosen, skipped), _connect() as mem, \
            _quarantine(quarantine_file) as sink:
        mem.migrate()
        report = edgar.load(mem, scope, chosen, resume=not no_resume, quarantine=sink, skipped=skipped)
    click.echo(edgar.report_json(report) if as_json else render.universe_report(report))
    _universe_done("load edgar", report)


@load.command("kpi")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_scoped
@_json_opt
def load_kpi(file: Path, tenant: str, scope_keys: tuple[str, ...], as_json: bool) -> None:
    """Load a KPI table CSV (one row per published value)."""
    from .loaders import kpi

    _loading("kpi", file)
    with _connect() as mem:
        mem.migrate()
        report = kpi.load(mem, _scope(tenant, scope_keys), file)
    _dump(report.model_dump()) if as_json else click.echo(render.load_report(report))


# ---------------------------------------------------------------- bootstrap


@main.group()
def bootstrap() -> None:
    """Build a NEW database offline with Neo4j's importer (a first load, many times
    faster than `load`), then serve it from the local launcher."""


def _bootstrap_options(fn: Any) -> Any:
    fn = _server_options(fn)
    fn = click.option("--replace", is_flag=True,
                      help="Replace a database that holds data (refused otherwise).")(fn)
    fn = click.option("--password", envvar="GRAPHMEM_NEO4J_PASSWORD", default=None,
                      help="The server's password (auth off without one), as for `server start`.")(fn)
    fn = click.option("--heap", default="1g", show_default=True, help="JVM heap of the server.")(fn)
    fn = click.option("--pagecache", default="512m", show_default=True, help="Neo4j page cache.")(fn)
    fn = click.option("--keep-work", is_flag=True, help="Keep the staging folder (CSV files, logs).")(fn)
    fn = click.option("--csv", type=click.Path(file_okay=False, path_type=Path), default=None,
                      help="Only write the importer's input to this folder (for neo4j-admin elsewhere: "
                           "Docker, a cluster); nothing else is touched.")(fn)
    fn = click.option("--csv-root", default=None, metavar="PATH",
                      help="With --csv: where that neo4j-admin sees the folder (e.g. /import in a container).")(fn)
    return fn


@bootstrap.command("companyfacts")
@_companyfacts_options
@_bootstrap_options
@_scoped
@_json_opt
def bootstrap_companyfacts(file: Path, submissions: tuple[Path, ...], quarantine_file: Path | None, tenant: str,
                           scope_keys: tuple[str, ...], **options: Any) -> None:
    """One SEC companyfacts file into a new database (what `load companyfacts` would write)."""
    from .loaders import bootstrap as loader

    scope = _scope(tenant, scope_keys)
    with _quarantine(quarantine_file) as sink:
        _bootstrap(lambda build: loader.load_files(build, scope, file, list(submissions), quarantine=sink),
                   **options)


@bootstrap.command("edgar")
@_universe_options
@_bootstrap_options
@click.option("--workers", type=click.IntRange(1, 256), default=min(256, len(os.sched_getaffinity(0))),
              show_default=True,
              help="Processes building companies side by side (the same database whatever their number).")
@_scoped
@_json_opt
def bootstrap_edgar(paths: tuple[Path, ...], ciks: tuple[str, ...], ciks_file: Path | None, tickers: tuple[str, ...],
                    company_tickers: Path | None, quarantine_file: Path | None, tenant: str,
                    scope_keys: tuple[str, ...], workers: int, **options: Any) -> None:
    """A universe of SEC companies into a new database (what `load edgar` would write,
    same inputs and selection). What `load edgar` leaves out is left out here, with the
    same report and exit code; the others are bootstrapped all the same. A company the
    offline build cannot take (a key from two publishers, more than 65,533 filings) is
    left out whole and reported failed: `load edgar` takes it afterwards."""
    from .loaders import bootstrap as loader

    scope = _scope(tenant, scope_keys)
    with _universe(paths, ciks, ciks_file, tickers, company_tickers) as (chosen, skipped), \
            _quarantine(quarantine_file) as sink:

        def build(into: Any) -> Any:  # no company loaded: an error inside the build, before any import or swap
            report = loader.load(into, scope, chosen, quarantine=sink, skipped=skipped, workers=workers)
            _none_loaded("bootstrap edgar", report)
            return report

        universe = _bootstrap(build, **options)
    _universe_done("bootstrap edgar", universe)


def _bootstrap(load: Any, home: Path | None, port: int, replace: bool, password: str | None, heap: str,
               pagecache: str, keep_work: bool, csv: Path | None, csv_root: str | None, as_json: bool) -> Any:
    """Bootstrap the launcher's database, or with ``--csv`` write the importer's input
    only; print what the load and the bootstrap did; return the load's report."""
    from . import offline
    from .loaders import edgar

    if csv is not None:
        probe = Memory.from_env() if os.environ.get("GRAPHMEM_NEO4J_URI") else None
        fresh = not csv.exists()
        try:
            loaded, totals, files = offline.export(csv, load, root=csv_root, probe=probe.db if probe else None)
        except BaseException:  # a failed export leaves no half-written folder of its own behind
            if fresh:
                shutil.rmtree(csv, ignore_errors=True)
            raise
        finally:
            if probe is not None:
                probe.close()
        summary: dict[str, Any] = {"totals": dataclasses.asdict(totals), "files": files.rows,
                                   "import_args": str(files.folder / "import.args")}
        done = (f"wrote the importer's input to {files.folder} ({sum(files.rows.values())} rows); import it with "
                f"`neo4j-admin database import full neo4j --overwrite-destination=true "
                f"{shlex.quote(f'@{csv_root or files.folder}/import.args')}`, start the database, then run "
                "`graphmem bootstrap finish`")
    else:
        cfg = _config(home, _bootstrap_port(home, port), heap=heap, pagecache=pagecache, password=password)
        loaded, report = offline.bootstrap(cfg, load, replace=replace, keep=keep_work,
                                           say=lambda line: click.echo(f"graphmem: {line}", err=True))
        summary, done = dataclasses.asdict(report), render.bootstrap_report(report)
    universe = isinstance(loaded, edgar.UniverseReport)
    if as_json:
        _dump({"load": json.loads(edgar.report_json(loaded)) if universe else loaded.model_dump(),
               "bootstrap": summary})
    else:
        click.echo(render.universe_report(loaded) if universe else render.load_report(loaded))
        click.echo(done)
    return loaded


def _bootstrap_port(home: Path | None, port: int) -> int:
    """``--port``, or when it is not given the port the home's running server serves on:
    a --replace puts the new database where its clients already connect, not on 7687."""
    if click.get_current_context().get_parameter_source("port") is not click.core.ParameterSource.DEFAULT:
        return port
    return srv.status(_config(home, port)).port or port


@bootstrap.command("finish")
def bootstrap_finish() -> None:
    """After an import made with --csv: complete the database at $GRAPHMEM_NEO4J_URI
    (the schema objects, the empty lists the importer cannot write, every index populated)."""
    from . import offline

    with _connect() as mem:
        version = offline.finish(mem)
    click.echo(f"finished: graphmem schema version {version}")


# ---------------------------------------------------------------- reads


@main.command()
@click.option("--entity", required=True)
@click.option("--attribute", required=True)
@click.option("--period", help="DATE (instant) or DATE..DATE (duration); default: the latest.")
@click.option("--unit")
@click.option("--definition", help="The key's definition (e.g. ltm for derived LTM values); default: any.")
@click.option("--cutoff", required=True, help="Only what was public by then (ISO).")
@click.option("--known-at", help="As recorded by then (ISO); default now.")
@_scoped
@_json_opt
def asof(entity: str, attribute: str, period: str | None, unit: str | None, definition: str | None, cutoff: str,
         known_at: str | None, tenant: str, scope_keys: tuple[str, ...], as_json: bool) -> None:
    """What the memory says at (cutoff, known_at); exit 4 when nothing is found."""
    with _connect() as mem:
        answer = mem.as_of(_scope(tenant, scope_keys), entity=entity, attribute=attribute,
                           period=_period(period), unit=unit, definition=definition,
                           cutoff=parse_time(cutoff, "--cutoff"), known_at=parse_time(known_at, "--known-at"))
    _dump(answer.model_dump(mode="json")) if as_json else click.echo(render.answer(answer))
    if answer.status == "not_found":
        sys.exit(4)


def _entity_ids(path: Path | None) -> list[str] | None:
    """Entity ids from a file, one per line (see :func:`_lines`)."""
    if path is None:
        return None
    ids = _lines(path, "--entities")
    if not ids:
        raise InputError("--entities", f"{path}: no entity ids (one per line)")
    return ids


@main.command("screen")
@click.option("--attribute", required=True, help="e.g. us-gaap:Revenues")
@click.option("--frame", help="CY2024 (a year), CY2024Q3 (a quarter) or CY2024Q3I (the instant ending it).")
@click.option("--period", help="An exact period instead of a frame: DATE or DATE..DATE.")
@click.option("--cutoff", required=True, help="Only what was public by then (ISO).")
@click.option("--known-at", help="As recorded by then (ISO); default now.")
@click.option("--entities", "entities_file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="The universe: entity ids, one per line (default: every entity that had reported it).")
@click.option("--unit", help="Only this unit (default: any, but one per screen).")
@click.option("--definition", default="", help="The key's definition (e.g. ltm for derived LTM values).")
@click.option("--sort", type=click.Choice(["entity", "value", "-value"]), default="entity", show_default=True)
@click.option("--ltm", is_flag=True, help="The last twelve months' value, each window chosen per entity from what "
              "was public (recorded as derivations); --frame optional: default each entity's latest.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)
@_scoped
def screen_cmd(attribute: str, frame: str | None, period: str | None, cutoff: str, known_at: str | None,
               entities_file: Path | None, unit: str | None, definition: str, sort: str, ltm: bool, fmt: str,
               tenant: str, scope_keys: tuple[str, ...]) -> None:
    """Every entity's value for a frame or period at a cutoff, without look-ahead; exit 4
    when no entity has one."""
    entities = _entity_ids(entities_file)
    if ltm and (period or definition):
        raise InputError("--ltm", "an LTM screen takes --frame (or nothing: each entity's latest window), "
                                  "not --period or --definition")
    with _connect() as mem:
        scope = _scope(tenant, scope_keys)
        if ltm:
            from .loaders import metrics

            result = metrics.screen_ltm(mem, scope, concept=attribute, frame=frame,
                                        cutoff=parse_time(cutoff, "--cutoff"),
                                        known_at=parse_time(known_at, "--known-at"), entities=entities,
                                        unit=unit or "USD", sort=sort)
        else:
            result = mem.screen(scope, attribute=attribute, frame=frame, period=_period(period),
                                cutoff=parse_time(cutoff, "--cutoff"), known_at=parse_time(known_at, "--known-at"),
                                entities=entities, unit=unit, definition=definition, sort=sort)
    if fmt == "json":
        click.echo(result.model_dump_json(indent=2))
    elif fmt == "csv":
        rows = render.screen_rows(result)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=render.SCREEN_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
        click.echo(buffer.getvalue(), nl=False)
    else:
        click.echo(render.screen(result))
    if not any(a.status != "not_found" for a in result.answers):
        sys.exit(4)


@main.command()
@click.option("--entity", required=True)
@click.option("--attribute", required=True)
@click.option("--period")
@_scoped
@_json_opt
def history(entity: str, attribute: str, period: str | None, tenant: str,
            scope_keys: tuple[str, ...], as_json: bool) -> None:
    """Every version of a fact key, on both time axes, with its records."""
    with _connect() as mem:
        versions = mem.history(_scope(tenant, scope_keys), entity=entity, attribute=attribute,
                               period=_period(period))
    if as_json:
        _dump([v.model_dump(mode="json") for v in versions])
    else:
        click.echo(render.versions(versions))


@main.command()
@click.option("--source", "source_id", help="Impact of retracting this source.")
@click.option("--version", "version_id", help="Impact of invalidating this version.")
@click.option("--max-depth", type=int)
@_scoped
@_json_opt
def impact(source_id: str | None, version_id: str | None, max_depth: int | None, tenant: str,
           scope_keys: tuple[str, ...], as_json: bool) -> None:
    """What lies downstream of a source or version, and the recompute order."""
    with _connect() as mem:
        report = mem.impact(_scope(tenant, scope_keys), source_id=source_id,
                            version_id=version_id, max_depth=max_depth)
    click.echo(report.to_json() if as_json else report.table())


@main.command()
@click.argument("source_id")
@click.option("--reason", required=True)
@click.option("--by")
@_scoped
@_json_opt
def retract(source_id: str, reason: str, by: str | None, tenant: str,
            scope_keys: tuple[str, ...], as_json: bool) -> None:
    """Withdraw a source and invalidate what was derived from it (idempotent)."""
    with _connect() as mem:
        report = mem.retract_source(_scope(tenant, scope_keys), source_id, reason=reason, by=by)
    click.echo(report.to_json() if as_json else report.table())


@main.command("lineage")
@click.argument("version_id")
@click.option("--direction", type=click.Choice(["upstream", "downstream"]), default="upstream",
              show_default=True)
@click.option("--max-depth", type=int)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "dot", "graphml", "png"]),
              default="table", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), callback=_in_a_folder,
              help="File to write (required for graphml and png).")
@click.option("--known-at", help="As recorded by then (ISO); default now.")
@_scoped
def lineage_cmd(version_id: str, direction: str, max_depth: int | None, fmt: str,
                out: Path | None, known_at: str | None, tenant: str, scope_keys: tuple[str, ...]) -> None:
    """The lineage of one version, as a table, JSON, DOT, GraphML or a PNG drawing."""
    if fmt in ("graphml", "png") and out is None:
        raise InputError("--out", f"--format {fmt} writes a file: give --out FILE")
    when = parse_time(known_at, "--known-at")
    with _connect() as mem:
        graph = mem.lineage(_scope(tenant, scope_keys), version_id, direction, max_depth, known_at=when)
    text = export.write(graph, fmt, out)
    if text is not None:
        click.echo(text)
    else:
        click.echo(f"wrote {out}")


@main.command()
@click.option("--fixtures", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder with the SEC and KPI fixtures (default: the checkout's tests/fixtures).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("out"),
              show_default=True, help="Where the lineage PNG goes.")
def demo(fixtures: Path | None, out: Path) -> None:
    """The main job: the filings demo on the embedded Neo4j (see the README)."""
    from .demo import run

    with _connect(start=True) as mem:
        run(mem, fixtures, out, click.echo)


# ---------------------------------------------------------------- mcp


@main.command("mcp")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP: the address to bind (loopback unless told otherwise).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP: the port.")
@click.option("--tokens", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              envvar="GRAPHMEM_MCP_TOKENS",
              help="HTTP: the TOML file mapping each bearer token to one scope ($GRAPHMEM_MCP_TOKENS).")
@click.option("--actor", envvar="GRAPHMEM_MCP_ACTOR", default="mcp", show_default=True,
              help="stdio: who approvals, rejections and admin calls are recorded by.")
@click.option("--read-only", is_flag=True, help="Offer the read tools only.")
@click.option("--allow-review", is_flag=True, help="Offer approve and reject.")
@click.option("--allow-admin", is_flag=True, help="Offer invalidate, retract_source and erase.")
@_scoped
def mcp(transport: str, host: str, port: int, tokens: Path | None, actor: str, read_only: bool,
        allow_review: bool, allow_admin: bool, tenant: str, scope_keys: tuple[str, ...]) -> None:
    """Serve graphmem to agents over MCP (needs graphmem[mcp]).

    \b
    The scope is the server's, never a tool argument: --tenant/--scope for stdio; over
    HTTP each bearer token in --tokens maps to one scope, and a request without a known
    token is refused.
    \b
    Tools:
      reads (always)     as_of, facts, screen, history, search, lineage, impact, trace,
                         candidates
      writes             build_context, record_entity, record_source, remember_fact,
                         remember_experience, save_task_state   (off with --read-only)
      --allow-review     approve, reject
      --allow-admin      invalidate, retract_source, erase
    """
    try:
        from .integrations.mcp import FixedAccess, Grants, TokenAccess, serve
    except ImportError as exc:
        raise InputError("graphmem mcp", f"needs the mcp extra: pip install 'graphmem[mcp]' ({exc})") from exc
    grants = Grants(read_only=read_only, allow_review=allow_review, allow_admin=allow_admin)
    if transport == "http":
        if tokens is None:
            raise InputError("--tokens", "the HTTP transport needs a tokens file (each token -> one scope)")
        access = TokenAccess.load(tokens)
    else:
        if tokens is not None:
            raise InputError("--tokens", "stdio serves one scope: give --tenant/--scope instead")
        access = FixedAccess(_scope(tenant, scope_keys), actor)
    with _connect() as memory:
        if not read_only:  # a read-only deployment may connect as a user that cannot migrate
            memory.migrate()
        serve(memory, access, grants, transport=transport, host=host, port=port)


@main.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(1, 65535), default=8766, show_default=True,
              help="The port (the MCP server's HTTP default is 8765: both can run with defaults).")
@click.option("--tokens", type=click.Path(exists=True, dir_okay=False, path_type=Path), envvar="GRAPHMEM_UI_TOKENS",
              help="TOML file mapping each bearer token to one scope (as for `graphmem mcp`); required off loopback.")
@_scoped
def ui(host: str, port: int, tokens: Path | None, tenant: str, scope_keys: tuple[str, ...]) -> None:
    """A read-only web view of what was known when (needs graphmem[ui]): search, a key's
    versions on cutoff x known_at, a source's impact, lineage, screens, agent memory.

    It speaks plain HTTP: off loopback, terminate TLS in front of it (a reverse proxy);
    its token cookie is then marked Secure. With --tokens each token's scope is read,
    so --tenant/--scope are refused."""
    try:
        from .ui import serve
    except ImportError as exc:
        raise InputError("graphmem ui", f"needs the ui extra: pip install 'graphmem[ui]' ({exc})") from exc
    given = click.get_current_context().get_parameter_source("tenant") == click.core.ParameterSource.COMMANDLINE
    if tokens and (given or scope_keys):
        raise click.UsageError("--tenant/--scope: with --tokens each token's scope is read; leave them out")
    with _connect() as memory:
        serve(memory, scope=_scope(tenant, scope_keys), tokens=tokens, host=host, port=port)


from .research.cli import panel_cmd  # noqa: E402 - registered after the commands it reuses

main.add_command(panel_cmd)

from .eval.commands import register  # noqa: E402 - graphmem embed, graphmem eval

register(main)
