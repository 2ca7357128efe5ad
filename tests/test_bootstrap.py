"""graphmem bootstrap: a new database built offline with Neo4j's importer equals what the
online loader writes from the same input, and never replaces a good database badly.

Equality is the test (graphdump.py): every node, label, property and relationship of
a tenant, with transaction times compared by rank, then as_of, history, search and
impact answers on sampled keys. Three layers, all against real Neo4j servers:

* the rule: a property test draws random histories (entities, filings, facts with
  restatements, corroborations, values returning, repeats, multi-source facts) and
  holds an offline build's rows equal to the online write path's graph, example by
  example (no importer: it is the rows that carry the decisions);
* the route: the real Tesla and LPA files, and random histories, go through the
  importer, the finishing server and the swap (one bootstrap for the module), and the
  served database is compared with online loads of the same input on the test
  session's server;
* the guard rails: a database holding data is refused without ``replace``, and a
  failure in the importer or in the swap leaves the old database serving.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
import zipfile
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import pytest
from click.testing import CliRunner
from graphdump import RowSink, from_neo4j
from graphmem.loaders import bootstrap as loader
from graphmem.loaders import edgar, sec, spool, universe
from graphmem.loaders.synthetic import MALFORMED, SyntheticUniverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import Authority, Entity, FactIn, InputError, Memory, Period, Scope, Source, bulk, offline, swap
from graphmem import server as srv
from graphmem.bulk import Build
from graphmem.cli import main
from graphmem.errors import ServerError
from graphmem.importcsv import FACT_KEY, SOURCE, GraphCsv
from graphmem.probe import ProbeError, Slot, Template, Templates, check_layouts
from graphmem.schema import latest

pytestmark = pytest.mark.usefixtures("short_lived_jvms")  # tests/conftest.py

UTC = dt.UTC
FIXTURES = Path(__file__).parent / "fixtures"
TESLA = (FIXTURES / "companyfacts-CIK0001318605-tesla.json", FIXTURES / "submissions-CIK0001318605-tesla.json")
LPA = (FIXTURES / "companyfacts-CIK0001997711-lpa.json", None)
DAY0 = dt.datetime(2024, 1, 1, 21, tzinfo=UTC)


def normalized(value, ranks: dict[str, int]):
    """A JSON model dump with transaction times as their rank in the graph (known_at
    dropped: each server's own clock)."""
    if isinstance(value, dict):
        return {k: (None if k == "known_at" else _rank(v, ranks) if k == "recorded_at" else normalized(v, ranks))
                for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v, ranks) for v in value]
    return value


def _rank(stamp: str | None, ranks: dict[str, int]) -> int | None:
    return None if stamp is None else ranks[dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).isoformat()]


def dumped(model, ranks):
    return normalized(model.model_dump(mode="json"), ranks)


# ---------------------------------------------------------------- the rule, example by example


def random_history(rng: random.Random):
    """Entities, then filings in order of availability (several may share one), each
    with facts about its own company: restatements, corroborations, values that
    return, a key twice in one filing, facts citing an earlier filing too, exact
    re-sends of an earlier filing, and re-puts of an unchanged entity."""
    entities = [Entity(id=f"cik:{n}", name=rng.choice([None, "Acme", "Ünïcode, \"Co\"\nline"]),
                       kind=rng.choice([None, "company"]),
                       aliases=tuple(rng.sample(["ACM", "A;B", "X Y"], rng.randint(0, 2))))
                for n in range(rng.randint(1, 2))]
    periods = [Period(end=dt.date(2023, 12, 31)), Period(start=dt.date(2023, 1, 1), end=dt.date(2023, 12, 31))]
    values = [Decimal("1"), Decimal("1.0"), Decimal("2"), Decimal("-3.25"), "text", True, dt.date(2023, 5, 1)]
    calls, filed = [], {e.id: [] for e in entities}
    for n, day in enumerate(sorted(rng.randint(0, 4) for _ in range(rng.randint(1, 7)))):
        entity = rng.choice(entities)
        if filed[entity.id] and rng.randint(0, 5) == 0:
            calls.append(rng.choice(filed[entity.id]))  # the same filing, sent again
            continue
        if rng.randint(0, 5) == 0:
            calls.append(("entity", entity))
        source = Source(id=f"{n:010d}-24-000001", kind=rng.choice(["10-K", "10-Q"]), authority=Authority.PRIMARY,
                        publisher=entity.id, available_by=DAY0 + dt.timedelta(days=day),
                        uri=rng.choice([None, f"u{n}"]), title=rng.choice([None, f"filed {day}"]),
                        meta={"form": "10-K"})
        earlier = [c[1].id for c in filed[entity.id]]
        items = [FactIn(entity=entity.id, attribute=rng.choice(["us-gaap:Assets", "dei:Shares"]),
                        unit=rng.choice(["USD", "shares"]), period=rng.choice(periods), value=rng.choice(values),
                        sources=(source.id,) + ((rng.choice(earlier),) if earlier and rng.random() < 0.5 else ()))
                 for _ in range(rng.randint(0, 5))]
        call = ("record", source, items)
        filed[entity.id].append(call)
        calls.append(call)
    return entities, calls


def replay(writer, scope: Scope, history, rows: bool = False) -> list:
    """The history's calls on a Memory or a Build (the same calls, in the same order);
    with ``rows``, a Build takes each filing whose facts are one entity's from that
    filing alone as rows (``Build.record_rows``, a loader's route)."""
    entities, calls = history
    for entity in entities:
        writer.put_entity(scope, entity)
    reports = []
    for call in calls:
        if call[0] == "entity":
            writer.put_entity(scope, call[1])
        elif rows and call[2] and all(f.sources == (call[1].id,) and f.entity == call[2][0].entity for f in call[2]):
            reports.append(writer.record_rows(scope, call[1], call[2][0].entity,
                                              [(f.attribute, f.unit, f.period, f.value) for f in call[2]]))
        else:
            reports.append(writer.record(scope, sources=[call[1]], items=call[2]))
    return reports


@pytest.fixture(scope="module")
def templates(migrated):
    """Search-text templates probed on the session's server (nothing is written there)."""
    with migrated.connect() as mem:
        yield Templates(lambda: mem.db)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=st.randoms(use_true_random=False).map(random_history), rows=st.booleans())
def test_a_build_writes_what_the_online_path_writes(mem, templates, tmp_path_factory, history, rows):
    scope = Scope(tenant=f"test-bulk-{uuid.uuid4().hex[:12]}")
    online = replay(mem, scope, history)
    sink = RowSink()
    build = Build(tmp_path_factory.mktemp("build"), sink, templates)
    replay(build, scope, history, rows)
    totals = build.finish()
    assert (totals.created, totals.evidence_added, totals.unchanged) == (
        sum(r.created for r in online), sum(r.evidence_added for r in online), sum(r.unchanged for r in online))
    expected, got = from_neo4j(mem.db.driver, scope.tenant).ranked(), sink.dump(scope.tenant).ranked()
    assert not expected.differences(got), expected.differences(got)


# ---------------------------------------------------------------- what a build refuses


def _build(tmp_path, templates) -> Build:
    return Build(tmp_path / "build", RowSink(), templates)


def _source(sid: str, publisher: str, day: int, authority=Authority.PRIMARY) -> Source:
    return Source(id=sid, kind="10-K", authority=authority, publisher=publisher,
                  available_by=DAY0 + dt.timedelta(days=day))


def _fact(entity: str, value, *sources: str) -> FactIn:
    return FactIn(entity=entity, attribute="us-gaap:Assets", unit="USD", period=Period(end=dt.date(2023, 12, 31)),
                  value=value, sources=sources)


def test_a_build_refuses_what_the_online_path_refuses(tmp_path, templates):
    build, scope = _build(tmp_path, templates), Scope(tenant="t")
    with pytest.raises(InputError, match="facts.0..entity: entity 'cik:1' not found"):
        build.record(scope, sources=[_source("s1", "cik:1", 0)], items=[_fact("cik:1", 1, "s1")])
    build.put_entity(scope, Entity(id="cik:1"))
    with pytest.raises(InputError, match="source 'nope' not recorded"):
        build.record(scope, items=[_fact("cik:1", 1, "nope")])
    build.record(scope, sources=[_source("s1", "cik:1", 0)], items=[_fact("cik:1", 1, "s1")])
    with pytest.raises(InputError, match="already recorded with other fields .available_by "):
        build.record(scope, sources=[_source("s1", "cik:1", 1)])
    build.record(scope, sources=[_source("s1", "cik:1", 0)])  # the same source again: nothing new
    with pytest.raises(InputError, match=r"items\[0\]: a graphmem.FactIn is required"):
        build.record(scope, items=[{"entity": "cik:1"}])
    with pytest.raises(InputError, match="entity: a graphmem.Entity is required"):
        build.put_entity(scope, "cik:2")


def test_a_build_refuses_rows_as_their_factins_would_before_writing_any(tmp_path, templates):
    sink, scope = RowSink(), Scope(tenant="t")
    build = Build(tmp_path / "build", sink, templates)
    year = Period(end=dt.date(2023, 12, 31))
    good = ("us-gaap:Assets", "USD", year, Decimal("1"))
    with pytest.raises(InputError, match="facts.0..entity: entity 'cik:1' not found"):
        build.record_rows(scope, _source("s1", "cik:1", 0), "cik:1", [good])
    build.put_entity(scope, Entity(id="cik:1"))
    long_unit = "u" * 2049  # a FactIn's unit holds at most 2,048 bytes
    for bad, where, why in [
        ((*good[:3], 1.5), r"rows\[1\] FactIn.value", "floats are refused"),
        (("us-gaap:Assets", long_unit, year, Decimal("1")), r"rows\[1\] FactIn.unit", "2,049 bytes"),
        (("", "USD", year, Decimal("1")), r"rows\[1\] FactIn.attribute", "at least 1 character"),
        ((*good[:3], Decimal("1E+400")), r"rows\[1\] FactIn.value", "magnitude"),
        (good[:3], r"rows\[1\]", "an \\(attribute, unit, period, value\\) tuple is required"),
    ]:
        with pytest.raises(InputError, match=f"{where}: .*{why}"):
            build.record_rows(scope, _source("s1", "cik:1", 0), "cik:1", [good, bad])
    with pytest.raises(InputError, match=r"rows\[0\] FactIn.entity"):
        build.record_rows(scope, _source("s1", "cik:1", 0), "", [good])
    with pytest.raises(InputError, match="rows: a list of"):
        build.record_rows(scope, _source("s1", "cik:1", 0), "cik:1", "us-gaap:Assets")
    assert build.finish() == bulk.Totals()  # nothing of a refused call was kept: no key, no source
    assert SOURCE not in sink.rows and FACT_KEY not in sink.rows


def test_build_rows_are_converted_as_factins_convert_them(tmp_path, templates):
    """A row of other types than a loader's (an int, a text value, a NamedTuple row) is
    taken as its FactIn takes it: the same keys and values as ``record``'s."""
    scope, year = Scope(tenant="t"), Period(end=dt.date(2023, 12, 31))
    facts = [("us-gaap:Assets", "USD", year, 7), ("dei:Name", "", year, "Acme"),
             _Row("x:Y", "USD", year, Decimal("2.50")), ("x:Y", "USD", Period(end=dt.date(2022, 12, 31)), True)]
    dumps = []
    for route in ("record", "rows"):
        sink = RowSink()
        build = Build(tmp_path / route, sink, templates, now=DAY0)
        build.put_entity(scope, Entity(id="cik:1"))
        if route == "record":
            build.record(scope, sources=[_source("s1", "cik:1", 0)], items=[FactIn(
                entity="cik:1", attribute=a, unit=u, period=p, value=v, sources=("s1",)) for a, u, p, v in facts])
        else:
            build.record_rows(scope, _source("s1", "cik:1", 0), "cik:1", facts)
        build.finish()
        dumps.append(sink.dump("t").ranked())
    assert not dumps[0].differences(dumps[1]), dumps[0].differences(dumps[1])
    assert len(dumps[0].nodes) == 1 + 1 + 4 * 2 + 1  # the entity, the source, a key and a version per fact, the clock


class _Row(NamedTuple):
    attribute: str
    unit: str
    period: Period
    value: Decimal


@pytest.mark.parametrize("second", [
    _source("s2", "cik:2", 1),  # another publisher on the key
    _source("s2", "cik:1", 1, Authority.INFERENCE),  # another authority
    _source("s2", "cik:1", -1),  # earlier than the key's evidence so far
], ids=["publisher", "authority", "order"])
def test_a_build_refuses_keys_its_rule_does_not_cover(tmp_path, templates, second):
    build, scope = _build(tmp_path, templates), Scope(tenant="t")
    build.put_entity(scope, Entity(id="cik:1"))
    build.record(scope, sources=[_source("s1", "cik:1", 0)], items=[_fact("cik:1", 1, "s1")])
    build.record(scope, sources=[second], items=[_fact("cik:1", 2, "s2")])
    with pytest.raises(InputError, match="one publisher at one authority, in order of availability"):
        build.flush()


def test_a_build_refuses_facts_after_their_entity_was_flushed_or_renamed(tmp_path, templates):
    build, scope = _build(tmp_path, templates), Scope(tenant="t")
    build.put_entity(scope, Entity(id="cik:1", name="Acme"))
    build.record(scope, sources=[_source("s1", "cik:1", 0)], items=[_fact("cik:1", 1, "s1")])
    with pytest.raises(InputError, match="renamed after facts about it were recorded"):
        build.put_entity(scope, Entity(id="cik:1", name="Acme Corp"))
    build.flush()
    with pytest.raises(InputError, match="already written"):
        build.record(scope, sources=[_source("s2", "cik:1", 1)], items=[_fact("cik:1", 2, "s2")])


def test_a_part_of_a_build_takes_only_its_own_ticks(tmp_path, templates):
    build, scope = _build(tmp_path, templates), Scope(tenant="t")
    ticks = build.reserve(3)
    build.put_entity(scope, Entity(id="cik:0"))  # the whole build's own, after the reserved ticks
    part = Build(tmp_path / "part", GraphCsv(tmp_path / "part-csv"), templates, now=build.start, ticks=ticks)
    part.put_entity(scope, Entity(id="cik:1"))
    part.record(scope, sources=[_source("s1", "cik:1", 0)])
    with pytest.raises(InputError, match="more than 2 transactions in one part of the build"):
        part.record(scope, sources=[_source("s2", "cik:1", 1)])
    assert part.clocks["t"] < build.clocks["t"]


def _combined(folder: Path, cik: int, rows: list[dict]) -> None:
    """A company's companyfacts file, Assets only (a combined filing: two companies' rows
    with one accession)."""
    folder.mkdir(exist_ok=True)
    (folder / f"CIK{cik:010d}.json").write_text(json.dumps(
        {"cik": cik, "entityName": f"Company {cik}", "facts": {"us-gaap": {"Assets": {"units": {"USD": rows}}}}}))


def _built_universe(folder: Path, templates: Templates, inputs: list[Path], workers: int):
    """A universe built as bootstrap edgar builds it (no importer): the report, the
    quarantined rows, and each importer file's text."""
    csv = GraphCsv(folder / "csv")
    build = Build(folder / "spool", csv, templates, now=DAY0)
    with universe.discover(inputs) as found, Collect() as quarantined:
        report = loader.load(build, Scope(tenant="t"), universe.select(found), quarantine=quarantined,
                             workers=workers)
    build.finish()
    files = csv.close()
    texts = {name: (files.folder / name).read_text() for name in files.rows}
    return [c.model_dump(exclude={"seconds"}) for c in report.companies], quarantined.records, texts


def _two_companies(folder: Path) -> Path:
    """Two companies with a combined filing (the second has two filings)."""
    row = {"end": "2023-12-31", "accn": COMBINED, "fy": 2023, "fp": "FY", "form": "10-K", "filed": "2024-02-01"}
    _combined(folder, 9200001, [{**row, "val": 100}])
    _combined(folder, 9200002, [{**row, "val": 40}, {**row, "val": 41, "accn": "0009200002-24-000009",
                                                     "form": "10-Q", "filed": "2024-05-01"}])
    return folder


def _inputs(tmp_path: Path) -> list[Path]:
    """The synthetic universe, then the two companies."""
    written = SYNTHETIC.write_zips(tmp_path / "synthetic")
    return [written["companyfacts"], written["submissions"], _two_companies(tmp_path / "more")]


COMBINED = "0009200001-24-000001"


def test_a_universe_built_in_processes_of_their_own_equals_one_built_in_one(migrated, tmp_path):
    """Two processes build what one builds, byte for byte: the clock, the quarantine, the
    templates (each build probes its own: the workers start with the first company's), and
    a combined filing whose second company's part (made where its process could not see
    the first company) is made again."""
    inputs = _inputs(tmp_path)
    with migrated.connect() as mem:
        one = _built_universe(tmp_path / "one", Templates(lambda: mem.db), inputs, workers=1)
        two = _built_universe(tmp_path / "two", Templates(lambda: mem.db), inputs, workers=2)
    assert one == two
    reports, quarantined, texts = two
    assert [r["status"] for r in reports] == ["loaded"] * (SYNTHETIC.companies + 2) and quarantined
    assert texts["sources.csv"].count(f"{COMBINED}:cik:9200002") == 1
    assert len(texts["clocks.csv"].splitlines()) == 2  # one tenant's, after the header


def test_a_build_whose_rows_outgrow_memory_writes_what_one_held_in_memory_writes(migrated, tmp_path, monkeypatch):
    """A company's rows and assertions are held in Python up to a bound, then on disk
    (the loader's spool, the build's pending assertions): past the bound, mid-company,
    the build writes the same files byte for byte."""
    inputs = _inputs(tmp_path)
    with migrated.connect() as mem:
        held = _built_universe(tmp_path / "held", Templates(lambda: mem.db), inputs, workers=1)
        monkeypatch.setattr(spool, "MEMORY_ROWS", 7)
        monkeypatch.setattr(bulk, "PENDING_ROWS", 5)
        on_disk = _built_universe(tmp_path / "disk", Templates(lambda: mem.db), inputs, workers=1)
    assert on_disk == held
    assert sum(r["rows"] for r in held[0]) > 7 * len(held[0])  # past both bounds in each company


def test_a_company_past_its_ticks_is_left_out_whole_and_the_build_sees_what_parts_wrote(
        tmp_path, templates, monkeypatch):
    monkeypatch.setattr(loader, "STRIDE", 4)  # three transactions a company: an entity, a filing, a mark
    csv = GraphCsv(tmp_path / "csv")
    build, scope = Build(tmp_path / "spool", csv, templates, now=DAY0), Scope(tenant="t")
    with universe.discover([_two_companies(tmp_path / "more")]) as found:
        report = loader.load(build, scope, universe.select(found), workers=2)
    first, second = report.companies
    assert first.status == "loaded" and second.status == "failed"
    assert "left out whole" in second.error and "more than 3 transactions" in second.error
    with pytest.raises(InputError, match="holds entities, sources or load marks in this build already"):
        loader.load(build, scope, [])
    with pytest.raises(InputError, match="already written"):  # the part's entity, flushed, seen by the build
        build.record(scope, sources=[_source("s9", "cik:9200001", 0)], items=[_fact("cik:9200001", 1, "s9")])
    build.finish()
    files = csv.close()
    text = "".join((files.folder / name).read_text() for name in files.rows)
    assert "cik:9200001" in text and "9200002" not in text


def test_bootstrap_edgar_help_names_the_filings_a_company_may_have():
    """`bootstrap edgar --help` says which companies the build leaves out by the build's
    real clock stride (it said 4,093 filings, a stride of 4,096 long gone)."""
    said = " ".join(CliRunner().invoke(main, ["bootstrap", "edgar", "--help"]).output.split())
    assert f"more than {loader.STRIDE - 3:,} filings" in said


# ---------------------------------------------------------------- the pieces


def test_templates_fill_and_render():
    template = Template(("a ", Slot("x"), " b ", Slot("y")))
    assert template.fill({"x": "1"}) == Template(("a 1 b ", Slot("y")))
    assert template.render({"x": "1", "y": "2"}) == "a 1 b 2"
    with pytest.raises(ProbeError, match="uses y"):
        template.render({"x": "1"})


def test_layouts_must_match_what_the_statements_write(migrated):
    with migrated.connect() as mem:
        Templates(lambda: mem.db).create(Entity(id="e"), _source("s", "p", 0))  # probes, checks: fine
    properties = {"entity": set(), "source": set(), "key": set(), "fact": set(), "clock": set(), "evidence": set(),
                  "about": set(), "version_of": set()}
    with pytest.raises(ProbeError, match="Entity properties"):
        check_layouts(properties)


def test_importer_input_quotes_nulls_arrays_and_line_breaks(tmp_path):
    from graphmem.importcsv import ENTITY

    csv = GraphCsv(tmp_path)
    csv.add(ENTITY, ("u1", "t", "s", "e1", "", None, ["A", "B"], "2024-01-01T00:00:00+00:00"))
    csv.add(ENTITY, ("u2", "t", "s", "e2", 'a "quoted"\nname', "k", [], "2024-01-01T00:00:00+00:00"))
    files = csv.close()
    lines = (tmp_path / "entities.csv").read_text().split("\n")
    assert lines[0] == "uid:ID(Entity),tenant,scope,id,name,kind,aliases:string[],recorded_at:datetime"
    assert lines[1] == '"u1","t","s","e1","",,"A\x1fB","2024-01-01T00:00:00+00:00"'
    assert lines[2:4] == ['"u2","t","s","e2","a ""quoted""', 'name","k",,"2024-01-01T00:00:00+00:00"']
    assert files.rows == {"entities.csv": 2} and files.multiline == ("entities.csv",)
    assert "--multiline-fields=true" in files.import_args()
    with pytest.raises(InputError, match="U\\+001F"):
        GraphCsv(tmp_path / "x").add(ENTITY, ("u", "t", "s", "e", None, None, ["a\x1fb"], "2024-01-01"))


# ---------------------------------------------------------------- through the importer


RANDOM_TENANTS = 4  # random histories bootstrapped beside Tesla and LPA, each in a tenant of its own
SYNTHETIC = SyntheticUniverse(companies=4, filings=8, concepts=12, seed=3, malformed=len(MALFORMED), recent=4)


class Collect(list):
    """A quarantine sink keeping the records in memory (a context manager, as JsonLines)."""

    @property
    def records(self) -> list:
        return [r.model_dump() for r in self]

    def __call__(self, record) -> None:
        self.append(record)

    def __enter__(self) -> Collect:
        return self

    def __exit__(self, *exc) -> None:
        return None


@pytest.fixture(scope="module")
def booted(migrated, tmp_path_factory):
    """Tesla and LPA loaded online into a tenant of the session's server, and random
    histories into tenants of their own; then all of it bootstrapped from the same input
    into a new database with a launcher of its own (the route the CLI takes: a fresh
    home, the probe on a server started on the staging folder)."""
    scope = Scope(tenant=f"test-bootstrap-{uuid.uuid4().hex[:12]}")
    randoms = [(Scope(tenant=f"test-random-{uuid.uuid4().hex[:12]}"), random_history(random.Random(n)))
               for n in range(RANDOM_TENANTS)]
    synthetic = Scope(tenant=f"test-synthetic-{uuid.uuid4().hex[:12]}")
    written = SYNTHETIC.write_zips(tmp_path_factory.mktemp("synthetic"))
    archives = [written["companyfacts"], written["submissions"]]
    cfg = srv.ServerConfig(home=Path(tmp_path_factory.mktemp("bootstrapped")), port=offline._free_port(),
                           heap="1g", pagecache="256m")

    def load(build: Build):
        for other, history in randoms:
            replay(build, other, history)
        build.flush()  # so that the loader's per-company counts are its companies' own
        with universe.discover(archives) as found, Collect() as quarantined:
            universe_report = loader.load(build, synthetic, universe.select(found), quarantine=quarantined,
                                          workers=2)  # in processes of their own, equal all the same
        return universe_report, quarantined.records, [
            loader.load_files(build, scope, facts, [subs] if subs else []) for facts, subs in (TESLA, LPA)]

    with migrated.connect() as mem:
        for other, history in randoms:
            replay(mem, other, history)
        with universe.discover(archives) as found, Collect() as quarantined:
            online_universe = edgar.load(mem, synthetic, universe.select(found), quarantine=quarantined)
        online = [sec.load(mem, scope, facts, subs) for facts, subs in (TESLA, LPA)]
        (offline_universe, offline_quarantined, loads), report = offline.bootstrap(cfg, load)
        try:
            with Memory.connect(cfg.uri) as served:
                expected = from_neo4j(mem.db.driver, scope.tenant)
                got = from_neo4j(served.db.driver, scope.tenant)
                yield SimpleNamespace(
                    mem=mem, served=served, scope=scope, randoms=[r[0] for r in randoms], cfg=cfg, online=online,
                    loads=loads, report=report, expected=expected, got=got, synthetic=synthetic,
                    universes=(online_universe, offline_universe), quarantined=(quarantined.records,
                                                                                offline_quarantined))
        finally:
            srv.stop(cfg)


def test_the_bootstrapped_graph_equals_the_online_graph(booted):
    expected, got = booted.expected.ranked(), booted.got.ranked()
    assert not expected.differences(got), expected.differences(got)
    # Tesla's and LPA's nodes (one tenant clock between them), and their load marks
    assert len(got.nodes) == 19234 + 1166 - 1 + (50 + 1) + (3 + 1)
    for online, offline_load in zip(booted.online, booted.loads, strict=True):
        assert (offline_load.versions_created, offline_load.evidence_added, offline_load.rerounded) == (
            online.versions_created, online.evidence_added, online.rerounded)
    assert not booted.report.replaced


def test_a_synthetic_universe_bootstraps_to_its_online_graph(booted):
    expected = from_neo4j(booted.mem.db.driver, booted.synthetic.tenant).ranked()
    got = from_neo4j(booted.served.db.driver, booted.synthetic.tenant).ranked()
    assert not expected.differences(got), expected.differences(got)
    online, offline_ = booted.universes
    assert [c.model_dump(exclude={"seconds"}) for c in online.companies] == [
        c.model_dump(exclude={"seconds"}) for c in offline_.companies]
    assert online.totals()["quarantine"] == {  # every malformed row kept out, alike
        reason: n * SYNTHETIC.companies for reason, n in sorted(SYNTHETIC.expected_quarantine().items())}
    assert booted.quarantined[0] == booted.quarantined[1] and booted.quarantined[0]
    assert online.totals()["rerounded"] > 0 and online.totals()["versions_created"] < online.totals()["assertions"]


def test_random_histories_through_the_importer_equal_their_online_graphs(booted):
    for scope in booted.randoms:
        expected = from_neo4j(booted.mem.db.driver, scope.tenant).ranked()
        got = from_neo4j(booted.served.db.driver, scope.tenant).ranked()
        assert expected.nodes and not expected.differences(got), expected.differences(got)


def _ranks(dump) -> dict[str, int]:
    stamps = {v[1] for props in dump.nodes.values() for k, v in props.items() if k in ("recorded_at", "last")}
    stamps |= {v[1] for *_, props in dump.relationships for k, v in props if k == "recorded_at"}
    return {stamp: n for n, stamp in enumerate(sorted(stamps))}


def _sample_keys(booted) -> list[dict]:
    keys = sorted((props["entity"][1], props["attribute"][1], props["period"][1], props["unit"][1])
                  for (label, _), props in booted.expected.nodes.items() if label == "FactKey")
    return keys[::97] + [("cik:1318605", "us-gaap:Assets", "2015-12-31", "USD")]


def _period(text: str) -> Period:
    start, _, end = text.rpartition("..")
    return Period(start=dt.date.fromisoformat(start) if start else None, end=dt.date.fromisoformat(end))


def test_as_of_and_history_answer_alike_on_sampled_keys(booted):
    mine, theirs = _ranks(booted.expected), _ranks(booted.got)
    for entity, attribute, period, unit in _sample_keys(booted):
        selector = dict(entity=entity, attribute=attribute, period=_period(period), unit=unit)
        history = booted.mem.history(booted.scope, entity=entity, attribute=attribute, period=_period(period))
        assert [dumped(v, mine) for v in history] == [dumped(v, theirs) for v in booted.served.history(
            booted.scope, entity=entity, attribute=attribute, period=_period(period))]
        times = sorted({e.available_by for v in history for e in v.sources})
        for cutoff in [t + d for t in times for d in (-dt.timedelta(microseconds=1), dt.timedelta(0))]:
            assert dumped(booted.mem.as_of(booted.scope, cutoff=cutoff, **selector), mine) == dumped(
                booted.served.as_of(booted.scope, cutoff=cutoff, **selector), theirs)


@pytest.mark.parametrize("text", ["Tesla 2015-12-31", "10-K 2015-12-31 USD", "dei:EntityCommonStockSharesOutstanding",
                                  "Logistic Properties 2023", "ifrs-full:Revenue"])
def test_search_and_impact_answer_alike(booted, text):
    mine, theirs = _ranks(booted.expected), _ranks(booted.got)
    cutoff = dt.datetime(2025, 1, 1, tzinfo=UTC)
    found = [m.search(booted.scope, text=text, cutoff=cutoff, limit=500) for m in (booted.mem, booted.served)]
    assert found[0].status == "found"
    assert found[0].explain.matched == found[1].explain.matched
    assert ({h.memory_id: dumped(h.answer, mine) for h in found[0].hits}
            == {h.memory_id: dumped(h.answer, theirs) for h in found[1].hits})
    sources = sorted({e.source_id for h in found[0].hits[:3] for e in h.answer.version.sources})
    for source_id in sources:
        reports = [m.impact(booted.scope, source_id=source_id) for m in (booted.mem, booted.served)]
        assert [{(i.kind, i.id, i.depth, i.reason) for i in r.items} for r in reports][0] == {
            (i.kind, i.id, i.depth, i.reason) for i in reports[1].items}
        assert reports[0].counts == reports[1].counts


def test_the_bootstrapped_database_is_migrated_and_searchable(booted):
    info = booted.served.server_info()
    assert info["schema_version"] == latest()
    assert {row["name"] for row in info["schema"]} == {row["name"] for row in booted.mem.server_info()["schema"]}
    assert all(row["state"] == "ONLINE" for row in info["schema"])


def _memory(dump) -> tuple[dict, set]:
    """A dump's memory: its nodes but the loader's bookkeeping (tenant clock, load marks)."""
    return {k: v for k, v in dump.nodes.items() if k[0] not in ("GraphmemClock", "LoadMark")}, dump.relationships


def test_a_later_online_load_of_the_same_files_changes_nothing(booted):
    resumed = [sec.load(booted.served, booted.scope, facts, subs) for facts, subs in (TESLA, LPA)]
    assert [r.filings_recorded for r in resumed] == [50, 3]  # the bootstrap's load marks: nothing to write
    rewritten = [sec.load(booted.served, booted.scope, facts, subs, resume=False) for facts, subs in (TESLA, LPA)]
    assert sum(r.versions_created + r.evidence_added for r in rewritten) == 0
    assert sum(r.unchanged for r in rewritten) == 17718 + 768
    assert _memory(from_neo4j(booted.served.db.driver, booted.scope.tenant)) == _memory(booted.got)


def test_a_database_that_holds_data_is_refused_without_replace(booted):
    with pytest.raises(InputError, match="holds data; pass --replace"):
        offline.bootstrap(booted.cfg, lambda build: loader.load_files(build, booted.scope, LPA[0]), probe=booted.mem.db)
    _still_serving(booted)


def _still_serving(booted) -> None:
    assert srv.status(booted.cfg).running
    with Memory.connect(booted.cfg.uri) as served:
        assert served.counts(booted.scope)["versions"] == 9801 + 592
    assert sorted(p.name for p in booted.cfg.home.iterdir()) == ["launcher.log", "launcher.pid", "neo4j"]


def test_an_importer_failure_leaves_the_old_database_serving(booted):
    def load(build: Build):
        loader.load_files(build, booted.scope, LPA[0])
        key = ("same-uid",) + ("x",) * 7 + (None, "2024-01-01", 1, [1, 0, 0, 0], ["1x"], [], "2024-01-01T00:00:00Z")
        build._sink.add(FACT_KEY, key)
        build._sink.add(FACT_KEY, key)  # a duplicate id

    stale = booted.cfg.home / "bootstrap-20260101T000000-4194999"  # a killed bootstrap's (no such pid)
    (stale / "server").mkdir(parents=True)
    with pytest.raises(ServerError, match="the importer failed"):
        offline.bootstrap(booted.cfg, load, replace=True, probe=booted.mem.db)
    _still_serving(booted)  # and the stale folder is gone


def test_a_new_database_that_does_not_start_is_swapped_back_out(booted, tmp_path):
    broken = tmp_path / "neo4j"
    broken.mkdir()
    (broken / "data").write_text("a file where the store's folder belongs")
    with pytest.raises(ServerError, match="exited"):
        swap.replace(booted.cfg, broken)
    assert (broken / "data").is_file()  # back where it was
    _still_serving(booted)


def test_replace_through_the_command_line_serves_the_new_database(booted):
    result = CliRunner().invoke(main, ["bootstrap", "companyfacts", str(LPA[0]), "--home", str(booted.cfg.home),
                                       "--port", str(booted.cfg.port), "--tenant", booted.scope.tenant,
                                       "--replace", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["bootstrap"]["replaced"]
    with Memory.connect(booted.cfg.uri) as served:
        assert served.counts(booted.scope)["versions"] == 592
        assert served.entity(booted.scope, "cik:1318605") is None
    assert sorted(p.name for p in booted.cfg.home.iterdir()) == ["launcher.log", "launcher.pid", "neo4j"]


def test_a_replace_where_no_company_loads_leaves_the_old_database_serving(booted, tmp_path):
    """Every company of the universe fails: an error inside the build, before the import,
    so --replace never moves the served database aside (whatever the module's earlier
    tests left serving: counted before, compared after)."""
    with Memory.connect(booted.cfg.uri) as served:
        before = served.counts(booted.scope)
    (tmp_path / "companyfacts-CIK0000000002.json").write_text(LPA[0].read_text()[:4000])  # truncated
    done = CliRunner().invoke(main, ["bootstrap", "edgar", str(tmp_path), "--home", str(booted.cfg.home),
                                     "--port", str(booted.cfg.port), "--replace"],
                              env={"GRAPHMEM_NEO4J_URI": booted.cfg.uri})
    assert (done.exit_code, done.stderr.strip()) == (
        1, "graphmem: error: bootstrap edgar: 1 of 1 companies not loaded: CIK 2 (failed)")
    assert srv.status(booted.cfg).running
    with Memory.connect(booted.cfg.uri) as served:
        assert served.counts(booted.scope) == before and before["versions"] > 0
    assert sorted(p.name for p in booted.cfg.home.iterdir()) == ["launcher.log", "launcher.pid", "neo4j"]


def test_bootstrap_edgar_skips_and_names_an_unreadable_member_as_load_edgar_does(migrated, tmp_path):
    """The offline path reads its inputs as `load edgar` does: a company beside a broken
    member of the ZIP is written to the importer's input (--csv: no server needed), the
    member is named with its reason, exit 5; an empty ZIP is an error and writes nothing."""
    archive = tmp_path / "edgar.zip"
    row = {"end": "2023-12-31", "val": 7, "accn": "0001997711-24-000001", "form": "10-K", "filed": "2024-02-01"}
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("CIK0001997711.json", json.dumps({"cik": 1997711, "entityName": "Tiny", "facts": {
            "us-gaap": {"Revenues": {"units": {"USD": [row]}}}}}))
        z.writestr("broken.json", "{broken")
    env = {"GRAPHMEM_NEO4J_URI": migrated.uri}
    done = CliRunner().invoke(main, ["bootstrap", "edgar", str(archive), "--csv", str(tmp_path / "csv"), "--json"],
                              env=env)
    assert done.exit_code == 5, done.output
    report = json.loads(done.stdout)["load"]
    assert [(c["cik"], c["status"]) for c in report["companies"]] == [(1997711, "loaded")]
    assert report["skipped"] == [{"file": f"{archive}:broken.json", "reason": "not valid JSON"}]
    assert done.stderr.strip() == (f"graphmem: incomplete: bootstrap edgar: 1 unreadable file(s) skipped: "
                                   f"{archive}:broken.json (not valid JSON)")
    with zipfile.ZipFile(tmp_path / "empty.zip", "w"):
        pass
    empty = CliRunner().invoke(main, ["bootstrap", "edgar", str(tmp_path / "empty.zip"), "--csv",
                                      str(tmp_path / "nothing")], env=env)
    assert empty.exit_code == 1 and "nothing to load" in empty.stderr
    assert not (tmp_path / "nothing").exists()
