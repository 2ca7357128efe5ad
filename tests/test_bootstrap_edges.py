"""The offline bootstrap against the online path on inputs at its edges: odd text and
values through the importer, a row longer than its read buffer, paths with a comma or a
space, and a swap interrupted by an exception (tests/test_bootstrap.py holds the rest)."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import uuid
from decimal import Decimal

import pytest
from click.testing import CliRunner
from graphdump import from_neo4j

from graphmem import Authority, Entity, FactIn, Memory, Period, Scope, Source, offline, swap
from graphmem import server as srv
from graphmem.cli import main

pytestmark = pytest.mark.usefixtures("short_lived_jvms")

ODD = ['a "quoted", name', "line\nbreak", "cr\ronly", "crlf\r\nend", "unit\x1fsep", "nul\x00byte", "back\\slash\\",
       '\\"', "  padded  ", " ", "", "é漢😀\u2028\u2029\x85", "\ufeffbom", '"', "tab\tx", "\x1e\x1d\x01", "#hash",
       "x" * 60000]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _replay(writer, scope, entities, calls):
    for entity in entities:
        writer.put_entity(scope, entity)
    for sources, items in calls:
        writer.record(scope, sources=sources, items=items)


# values whose text or float copy could be written otherwise: 64 digits, exponents,
# extremes of a double, a zero with an exponent, booleans, dates
VALUES = [Decimal("1234567890123456789012345678901234567890123456789012345678901234"),
          Decimal("-0.1234567890123456789012345678901234567890123456789012345678901234"), Decimal("1E+300"),
          Decimal("-1.7976931348623157E+308"), Decimal("2.2250738585072014E-308"), Decimal("1E-308"),
          Decimal("9007199254740993"), Decimal("0.1"), Decimal("-0E-5"), Decimal("123.4500"), True, False,
          dt.date(1, 1, 1), dt.date(9999, 12, 31)]


def _odd_history():
    """An entity per odd text (its name, kind, alias; its source's uri, title and meta;
    its fact's definition and value), and one per odd value."""
    short = [text[:2000] for text in ODD]
    values = [*ODD, *VALUES]
    entities = [Entity(id=f"cik:{n}", name=text, kind=short[n] or None,
                       aliases=(short[n],) if short[n] and "\x1f" not in text else ())
                for n, text in enumerate(ODD)] + [Entity(id=f"cik:{n}") for n in range(len(ODD), len(values))]
    calls = []
    for n, value in enumerate(values):
        text = ODD[n] if n < len(ODD) else None
        source = Source(id=f"s{n}", kind="10-K", authority=Authority.PRIMARY, publisher=f"cik:{n}",
                        available_by=dt.datetime(2024, 1, 1, tzinfo=dt.UTC), uri=text, title=text,
                        meta={"m": text or ""})
        fact = FactIn(entity=f"cik:{n}", attribute="a", unit="u", definition=short[n] if text else "",
                      period=Period(end=dt.date(2023, 12, 31)), value=value, sources=(source.id,))
        calls.append(([source], [fact]))
    return entities, calls


def _bootstrapped_equals_online(mem, home, history):
    """``history`` written online into a tenant of the session's server and bootstrapped
    into a launcher home of its own: the two graphs are equal."""
    scope = Scope(tenant=f"test-review-{uuid.uuid4().hex[:12]}")
    _replay(mem, scope, *history)
    cfg = srv.ServerConfig(home=home, port=_free_port(), heap="512m", pagecache="64m")
    offline.bootstrap(cfg, lambda build: _replay(build, scope, *history), probe=mem.db)
    try:
        _served_equals_online(mem, cfg, scope)
    finally:
        srv.stop(cfg)


def _served_equals_online(mem, cfg, scope):
    with Memory.connect(cfg.uri) as served:
        expected = from_neo4j(mem.db.driver, scope.tenant).ranked()
        got = from_neo4j(served.db.driver, scope.tenant).ranked()
    assert not expected.differences(got), expected.differences(got)


def _long_row():
    """Each evidence appends its source's title to the version's search text: 70 filings
    with long titles make a row of 4.5 million characters, past the importer's 4 MiB read
    buffer."""
    calls = []
    for n in range(70):
        source = Source(id=f"long{n}", kind="10-K", authority=Authority.PRIMARY, publisher="cik:long",
                        title="t" * 65000, available_by=dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=n))
        fact = FactIn(entity="cik:long", attribute="a", unit="u", period=Period(end=dt.date(2023, 12, 31)),
                      value=Decimal(1), sources=(source.id,))
        calls.append(([source], [fact]))
    return [Entity(id="cik:long")], calls


def test_odd_text_values_and_a_long_row_bootstrap_into_a_home_with_a_comma(mem, tmp_path):
    """One bootstrap (each costs a server start) for three edges: odd text and values
    through the importer, a row longer than its read buffer, and a home whose path has a
    comma (the importer splits a list of files at commas: it is given their names alone)."""
    (odd_entities, odd_calls), (long_entities, long_calls) = _odd_history(), _long_row()
    _bootstrapped_equals_online(mem, tmp_path / "Smith, J" / "graphmem",
                                (odd_entities + long_entities, odd_calls + long_calls))


def test_an_export_to_a_folder_with_a_space_imports_with_its_args_file_and_finishes(mem, tmp_path):
    """The Docker route on its own: ``export``, ``neo4j-admin ... @import.args``, a
    server on the store, ``graphmem bootstrap finish``."""
    scope = Scope(tenant=f"test-review-{uuid.uuid4().hex[:12]}")
    history = _odd_history()
    _replay(mem, scope, *history)
    folder = tmp_path / "out dir #1" / "csv"
    offline.export(folder, lambda build: _replay(build, scope, *history), probe=mem.db)
    cfg = srv.ServerConfig(home=tmp_path / "home", port=_free_port(), heap="512m", pagecache="64m")
    (cfg.home / "conf").mkdir(parents=True)
    cfg.data_dir.mkdir()
    imported = subprocess.run(
        [srv.java_path(), *srv.JVM_FLAGS, "-cp", str(srv.build()), offline.ADMIN_TOOL, "database", "import", "full",
         "neo4j", "--overwrite-destination=true", f"@{folder / 'import.args'}"],
        env=os.environ | {"NEO4J_HOME": str(cfg.data_dir), "NEO4J_CONF": str(cfg.home / "conf")},
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)  # its report there
    assert imported.returncode == 0, (imported.stdout + imported.stderr)[-3000:]
    srv.start(cfg, tie=True)
    try:
        finished = CliRunner().invoke(main, ["bootstrap", "finish"], env={"GRAPHMEM_NEO4J_URI": cfg.uri})
        assert finished.exit_code == 0, finished.output
        _served_equals_online(mem, cfg, scope)
    finally:
        srv.stop(cfg)


def test_a_bootstrap_interrupted_while_stopping_the_old_server_is_finished_as_it_says(mem, tmp_path, monkeypatch):
    """Ctrl-C while the swap stops the old server: the journal names the new database,
    which must still be there for the next command to serve what it says it serves."""
    cfg = srv.ServerConfig(home=tmp_path / "home", port=_free_port(), heap="512m", pagecache="64m")
    srv.start(cfg, tie=True)
    try:
        with Memory.connect(cfg.uri) as old:
            old.put_entity(Scope(tenant="t-old"), Entity(id="cik:1"))
        stop = srv.stop

        def interrupted(config, *args, **kwargs):
            stopped = stop(config, *args, **kwargs)
            if config.home == cfg.home:
                raise KeyboardInterrupt
            return stopped

        monkeypatch.setattr(srv, "stop", interrupted)
        with pytest.raises(KeyboardInterrupt):
            offline.bootstrap(cfg, lambda build: build.put_entity(Scope(tenant="t-new"), Entity(id="cik:1")),
                              replace=True, probe=mem.db)
        monkeypatch.undo()
        (said, *_) = swap.recover(cfg)
        assert said.startswith("finished the swap") and "is the new database" in said
        srv.start(cfg, tie=True)
        with Memory.connect(cfg.uri) as served:
            assert [t for t in ("t-old", "t-new") if served.entity(Scope(tenant=t), "cik:1")] == ["t-new"]
    finally:
        srv.stop(cfg)
