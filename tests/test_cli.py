"""The command line's contract, run as a user runs it (a subprocess): an error is ONE
line on stderr naming what failed and where, exit 1; ``--debug`` keeps the traceback;
what stored data holds is shown escaped, never written raw to the terminal."""

from __future__ import annotations

import datetime as dt
import json
import socket
from pathlib import Path

import pytest
from procs import cli, env, run_cli  # noqa: E402 - test helpers beside this file

from graphmem import Entity, FactIn, InputError, Period, Source
from graphmem.cli import error_line

LPA = Path(__file__).parent / "fixtures" / "companyfacts-CIK0001997711-lpa.json"
UTC = dt.UTC
ASOF = ("asof", "--entity", "acme", "--attribute", "revenue", "--cutoff", "2025-01-01")


def one_line_error(done, code: int = 1) -> str:
    """The one stderr line of a failed command: exit 1, or 2 for a usage error (an
    option missing, misused or malformed)."""
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("graphmem: error: "), done.stderr
    return done.stderr


def _nothing_listens() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"bolt://127.0.0.1:{sock.getsockname()[1]}"


def test_a_server_that_does_not_answer_is_one_line(migrated):
    uri = _nothing_listens()
    environ = env(migrated, GRAPHMEM_NEO4J_URI=uri, GRAPHMEM_RETRY_ATTEMPTS="2")
    err = one_line_error(run_cli(*ASOF, environ=environ))
    assert "as_of: gave up after 2 attempt(s)" in err and uri.removeprefix("bolt://") in err
    debug = run_cli("--debug", *ASOF, environ=environ)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "UnavailableError" in debug.stderr


def test_an_empty_tenant_and_a_bad_setting_are_one_line_naming_them(migrated):
    err = one_line_error(run_cli(*ASOF, "--tenant", "", environ=env(migrated)), code=2)
    assert err == "graphmem: error: --tenant: must be a non-empty string\n"
    err = one_line_error(run_cli(*ASOF, environ=env(migrated, GRAPHMEM_WRITE_TIMEOUT="soon")))
    assert err.startswith("graphmem: error: GRAPHMEM_WRITE_TIMEOUT: expected a number")



def test_a_misused_option_is_a_usage_error_in_the_command_lines_words(migrated):
    """An option missing, misused or malformed exits 2 (README's usage error) naming the
    options, not the Python arguments the command passes them to; an error about the
    data stays exit 1."""
    environ = env(migrated)
    for args, said in (
            (("impact",), "impact: give exactly one of --source or --version"),
            (("impact", "--source", "x", "--version", "y"), "impact: give exactly one of --source or --version"),
            ((*ASOF[:-1], "yesterday"), "--cutoff: not an ISO date or datetime: 'yesterday'"),
            (("screen", "--attribute", "x", "--frame", "CY2015Q4I", "--period", "2015-12-31", "--cutoff",
              "2016-01-01"), "--frame: give exactly one of --frame (e.g. 'CY2024Q3') or --period"),
            (("lineage", "fv_000000000000000000000000", "--format", "graphml"),
             "--out: --format graphml writes a file: give --out FILE")):
        err = one_line_error(run_cli(*args, "--tenant", "cli-usage", environ=environ), code=2)
        assert err == f"graphmem: error: {said}\n"
    missing = one_line_error(run_cli("lineage", "fv_000000000000000000000000", "--tenant", "cli-usage",
                                     environ=environ))
    assert "no version fv_000000000000000000000000" in missing


# In the load's process: the second filing's write fails with a transient fault every
# time, after its facts are written (a server that went away in the middle of it).
FAIL_SECOND_FILING = """
import neo4j
from graphmem import facts
_real, _seen = facts.write_facts, []
def _write(tx, scope, items, *args, **kwargs):
    out = _real(tx, scope, items, *args, **kwargs)
    _seen.append(items[0].sources[0]) if items[0].sources[0] not in _seen else None
    if _seen.index(items[0].sources[0]) == 1:
        raise neo4j.exceptions.ServiceUnavailable("injected: the server went away")
    return out
facts.write_facts = _write
"""


def test_a_load_whose_retries_run_out_is_one_line_naming_the_file_and_the_filing(migrated, mem, scope):
    load = cli("load", "companyfacts", str(LPA), "--tenant", scope.tenant,
               environ=env(migrated, GRAPHMEM_RETRY_ATTEMPTS="2"), inject=FAIL_SECOND_FILING)
    out, err = load.communicate(timeout=300)
    assert load.returncode == 1 and out == "", (out, err)
    assert err.count("\n") == 1 and err.startswith(f"graphmem: error: load companyfacts {LPA}: record (source ")
    assert "gave up after 2 attempt(s)" in err and "the server went away" in err
    failed = err.split("record (source ", 1)[1].split(")", 1)[0]
    assert mem.source(scope, failed) is None  # that filing left nothing; the one before it stays
    assert mem.counts(scope)["sources"] == 1


def test_stored_control_characters_are_escaped_in_human_output(migrated, mem, scope):
    hostile = "\x1b[2J\x1b[31mred\rline\nbreak\u202eevil\x07"
    mem.put_entity(scope, Entity(id="acme"))
    mem.record_source(scope, Source(id=f"doc{hostile}", kind="memo", authority="primary",
                                    available_by=dt.datetime(2024, 1, 2, tzinfo=UTC)))
    mem.assert_fact(scope, FactIn(entity="acme", attribute="revenue", value=hostile, unit="text",
                                  period=Period(end=dt.date(2023, 12, 31)), sources=(f"doc{hostile}",)))
    environ = env(migrated)
    shown = run_cli(*ASOF, "--tenant", scope.tenant, environ=environ)
    history = run_cli("history", "--entity", "acme", "--attribute", "revenue", "--tenant",
                      scope.tenant, environ=environ)
    for done in (shown, history):
        assert done.returncode == 0, done.stderr
        assert not any(c in done.stdout for c in "\x1b\r\x07\u202e"), repr(done.stdout)
        assert "\\x1b[2J\\x1b[31mred\\rline\\nbreak" in done.stdout  # a table may cut the rest
    assert "\\x1b[2J\\x1b[31mred\\rline\\nbreak\\u202eevil\\x07" in shown.stdout.splitlines()[1]
    as_json = run_cli(*ASOF, "--tenant", scope.tenant, "--json", environ=environ)
    assert '"value": "\\u001b[2J\\u001b[31mred\\rline\\nbreak\\u202eevil\\u0007"' in as_json.stdout


def test_asof_reads_a_key_beside_a_derived_one_of_the_same_period_by_its_definition(migrated, mem, scope):
    """A reported year and an LTM value derived for the same window (`screen --ltm`
    records one) are two keys that differ by definition alone: asof named `definition=`,
    an option it did not have, so neither could be read from the command line."""
    mem.put_entity(scope, Entity(id="acme"))
    mem.record_source(scope, Source(id="10-K", kind="10-K", authority="primary",
                                    available_by=dt.datetime(2025, 2, 1, tzinfo=UTC)))
    year = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 12, 31))
    for value, definition in ((100, ""), (120, "ltm")):
        mem.assert_fact(scope, FactIn(entity="acme", attribute="revenue", unit="USD", value=value, period=year,
                                      definition=definition, sources=("10-K",)))
    environ = env(migrated)
    asked = (*ASOF[:-1], "2025-03-01", "--period", "2024-01-01..2024-12-31", "--tenant", scope.tenant)
    err = one_line_error(run_cli(*asked, environ=environ), code=2)
    assert "--definition 'ltm'" in err and err.endswith("pass --period, --unit or --definition\n"), err
    for definition, value in (("ltm", "120"), ("", "100")):
        done = run_cli(*asked, "--definition", definition, "--json", environ=environ)
        assert done.returncode == 0, done.stderr
        assert f'"value": "{value}"' in done.stdout and f'"definition": "{definition}"' in done.stdout


def test_an_error_line_is_one_printable_line_whatever_its_message_holds():
    line = error_line(InputError("entity 'a\x1b[2Jb'", "two\nlines\r\x07"), where="load kpi x.csv",
                      named="x.csv")
    assert line == ("graphmem: error: load kpi x.csv: entity 'a\\x1b[2Jb': two lines\\r\\x07")
    assert error_line(InputError("x.csv: row 2", "bad"), "load kpi x.csv", "x.csv") == \
        "graphmem: error: x.csv: row 2: bad"
    assert error_line(ValueError("boom")).startswith("graphmem: error: unexpected ValueError: boom")


def test_a_bad_panel_range_is_one_line_naming_its_option(migrated, tmp_path):
    """`graphmem panel`'s ranges: a day that does not exist, FROM after TO, a year range
    of instants, a bad line of a cutoffs file (named by its line) - each refused naming
    its option, none a crash or a silent other panel."""
    environ = env(migrated)
    quarters = "2019-03-31..2019-06-30:quarterly"
    times = tmp_path / "cutoffs.txt"
    times.write_text("# quarter ends\n2019-03-31\n\n2019-06-31\n")
    for args, said in (
            (("--frames", "CY2024Q3I", "--cutoffs", "2019-02-30..2024-12-31:quarterly"),
             "--cutoffs: '2019-02-30' is not a date: day is out of range for month"),
            (("--frames", "CY2024Q3I", "--cutoffs", "2024-12-31..2019-03-31:quarterly"),
             "--cutoffs: '2024-12-31..2019-03-31:quarterly': FROM 2024-12-31 is after TO 2019-03-31"),
            (("--frames", "CY2024Q4..CY2019Q1", "--cutoffs", quarters),
             "--frames: 'CY2024Q4..CY2019Q1': FROM CY2024Q4 is after TO CY2019Q1"),
            (("--frames", "CY2019I..CY2020I", "--cutoffs", quarters),
             "--frames: 'CY2019I': an instant frame names a quarter; the year's last day is CY2019Q4I"),
            (("--frames", "CY2019Q1I", "--cutoffs", str(times)),
             f"--cutoffs: {times} line 4: not an ISO date or datetime: '2019-06-31' (day is out of range for month)")):
        err = one_line_error(run_cli("panel", "--tenant", "t", "--attribute", "us-gaap:Assets", *args,
                                     environ=environ), code=2)
        assert err == f"graphmem: error: {said}\n"


def test_the_web_panel_page_refuses_a_bad_range_as_input(mem, scope):
    """The web view parses its cutoffs= with the command line's parser: a bad one is a
    400 naming it, never a server error."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from graphmem.ui import build_app

    client = TestClient(build_app(mem, scope=scope), base_url="http://127.0.0.1", raise_server_exceptions=False)
    for cutoffs, said in (("2019-02-30..2024-12-31:quarterly", "cutoffs: &#39;2019-02-30&#39; is not a date"),
                          ("2024-01-01..9999-12-31:yearly", "cutoffs: 7976 cutoffs")):
        page = client.get("/panel", params={"attribute": "us-gaap:Assets", "frames": "CY2024Q4I", "cutoffs": cutoffs})
        assert page.status_code == 400 and said in page.text, page.text


def test_an_ltm_screen_reaching_before_the_year_1_is_an_answer_not_an_overflow(migrated, mem, scope):
    """`screen --ltm` looks two years back from its cutoff, and an LTM window a day before
    its first quarter: from a cutoff in the years 1 and 2, or a quarter starting on
    0001-01-01, that was a date before the year 1 - "unexpected OverflowError" - where
    nothing earlier can exist and the answer is that no window can be built."""
    from graphmem.loaders import metrics

    mem.put_entity(scope, Entity(id="acme"))
    mem.record_source(scope, Source(id="s", kind="filing", authority="primary",
                                    available_by=dt.datetime(1, 6, 1, tzinfo=UTC)))
    mem.assert_fact(scope, FactIn(entity="acme", attribute="rev", value=5, unit="USD", sources=("s",),
                                  period=Period(start=dt.date(1, 1, 1), end=dt.date(1, 3, 31))))
    for cutoff in ("0001-01-01", "0002-12-31"):
        done = run_cli("screen", "--tenant", scope.tenant, "--attribute", "rev", "--ltm", "--cutoff", cutoff,
                       environ=env(migrated))
        assert done.returncode == 4 and done.stderr == "", done.stderr  # no entity has a window
    with pytest.raises(InputError, match="no LTM window"):
        metrics.ltm(mem, scope, entity="acme", concept="rev", cutoff=dt.datetime(2, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(("field", "said"), [
    ({"namespace": ["memories", ""]}, "namespace"),
    ({"namespace": ["memories.alice"]}, "namespace"),  # would be the namespace (memories, alice)
    ({"namespace": [f"l{i}" for i in range(17)]}, "namespace"),
    ({"namespace": ["memories"], "cutoff": "0001-01-01T00:00:00+01:00"}, "cutoff"),
    ({"query": "pizza \ud800"}, "surrogate"),
    ({"query": " ".join(f"w{i}" for i in range(300))}, "at most 256"),
], ids=["an empty label", "a label with a period", "17 labels", "a cutoff before the year 1",
        "a lone surrogate in the query", "300 words"])
def test_a_query_sets_bad_namespace_or_time_is_refused_naming_its_line(migrated, tmp_path, field, said):
    """`eval retrieval --queries FILE` checks every line before any search: a namespace the
    LangGraph store refuses (an empty label, a period in a label, more than 16 labels) was
    searched as a scope no store writes - every query scored as missed, no error - and a
    time whose UTC is before the year 1, or a query text the search refuses, failed in the
    search of its line, after the lines before it had run, naming the argument but not the
    line."""
    path = tmp_path / "q.jsonl"
    good = {"query": "pizza", "namespace": ["memories", "alice"], "tenant": "t"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **field}) + "\n")
    done = run_cli("eval", "retrieval", "--queries", str(path), environ=env(migrated))
    err = done.stderr
    assert done.returncode in (1, 2) and err.startswith(f"graphmem: error: {path}:2: "), err
    assert said in err


@pytest.mark.parametrize("dims", ["0", "5000", "9" * 5000])
def test_a_toy_embedders_dimension_out_of_range_is_refused_as_the_embedder_option(migrated, dims):
    """`--embedder toy:0` was refused as `dims`, a name the command line does not have, and
    `toy:` with 5,000 digits failed in int() past Python's 4,300 digits of text
    ("unexpected ValueError"): each is the --embedder option's bad value."""
    err = one_line_error(run_cli("embed", "--tenant", "t", "--embedder", f"toy:{dims}", environ=env(migrated)),
                         code=2)
    assert err.startswith("graphmem: error: --embedder: toy:") and err.endswith(
        ": the dimension must be an integer from 1 to 4,096\n") and len(err) < 300, err
