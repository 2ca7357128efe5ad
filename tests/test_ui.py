"""`graphmem ui`: the read-only web view, over HTTP and in a real headless Chromium.

One tenant holds real data, loaded once for the module the way the demo loads it:
Tesla's us-gaap:Assets as filed in 2016 (the 2015 year-end restatement: 8,092,460,000
in the 10-K of 2016-02-24, 8,067,939,000 in the 10-Q of 2016-05-10), the PayPal and
Shopify KPI table and PayPal's revenue retained per $100 of volume (a derivation, so
lineage and impact have depth), plus a candidate and a context snapshot. A second
tenant holds nothing of it. HTTP tests use Starlette's TestClient against the real
Neo4j; the browser tests drive Debian's /usr/bin/chromium through Playwright against
one uvicorn server serving both tenants by bearer token.

Set GRAPHMEM_UI_SHOTS=docs/ui to write a screenshot of each page there.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import socket
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from graphmem.loaders import kpi, metrics, sec  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from graphmem import Entity, FactIn, Period, Scope, Source  # noqa: E402
from graphmem.demo import COMPANIES  # noqa: E402
from graphmem.integrations.tokens import Caller, digest  # noqa: E402
from graphmem.ui import build_app  # noqa: E402
from graphmem.ui.app import LOOPBACK_HOSTS, allowed_hosts  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
TESLA, ASSETS = "cik:1318605", "us-gaap:Assets"
BEFORE, AFTER = "8,092,460,000", "8,067,939,000"  # as of 2016-05-09 / 2016-05-11
RESTATED_IN = "0001564590-16-018886"  # the 10-Q of 2016-05-10
KEY = f"/key?entity={TESLA}&attribute={ASSETS}&period=2015-12-31&unit=USD"
CHROMIUM = "/usr/bin/chromium"
TOKEN_A, TOKEN_B = "a-token-of-tenant-a-" + uuid.uuid4().hex, "a-token-of-tenant-b-" + uuid.uuid4().hex


def _tesla_2016(tmp: Path) -> Path:
    """Tesla's company facts cut to us-gaap:Assets as filed in 2016 (four filings)."""
    doc = json.loads((FIXTURES / "companyfacts-CIK0001318605-tesla.json").read_text())
    assets = doc["facts"]["us-gaap"]["Assets"]
    rows = [r for r in assets["units"]["USD"] if r["filed"].startswith("2016")]
    doc["facts"] = {"us-gaap": {"Assets": {**assets, "units": {"USD": rows}}}}
    path = tmp / "tesla-assets-2016.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def world(migrated, tmp_path_factory):
    a = Scope(tenant=f"test-ui-{uuid.uuid4().hex[:12]}")
    b = Scope(tenant=f"test-ui-other-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        sec.load(mem, a, _tesla_2016(tmp_path_factory.mktemp("ui")),
                 FIXTURES / "submissions-CIK0001318605-tesla.json")
        kpi.load(mem, a, FIXTURES / "kpi-pypl-shop.csv")
        entity, revenue, cost, volume = COMPANIES["PayPal"]
        derived = metrics.retained_per_100(mem, a, entity=entity, revenue=revenue, cost=cost, volume=volume,
                                           cutoff=dt.datetime(2025, 10, 30, 23, 59, 59, tzinfo=dt.UTC)).version
        mem.remember_fact(a, FactIn(entity=TESLA, attribute="us-gaap:Goodwill", unit="USD",
                                    value=Decimal("1"), period=Period(end=dt.date(2015, 12, 31)),
                                    sources=("no-such-filing",)))
        hits = mem.search(a, text="Tesla us-gaap:Assets", types=["fact"], limit=3)
        snapshot = mem.build_context(a, task_id="T-ui", memories=hits, token_budget=400).snapshot_id
        yield {"mem": mem, "a": a, "b": b, "derived": derived, "snapshot": snapshot,
               "hit": hits.hits[0].memory_id}


@pytest.fixture(scope="module")
def http(world):
    app = build_app(world["mem"], scope=world["a"], hosts=LOOPBACK_HOSTS)
    return TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)


@pytest.fixture(scope="module")
def other(world):
    """The same database served for the second tenant."""
    return TestClient(build_app(world["mem"], scope=world["b"]), base_url="http://127.0.0.1")


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# ---------------------------------------------------------------- HTTP


def test_key_answer_moves_across_the_restatement(http):
    before = http.get(KEY + "&cutoff=2016-05-09")
    after = http.get(KEY + "&cutoff=2016-05-11")
    assert before.status_code == after.status_code == 200
    answer = lambda r: _text(r.text.split('id="value"')[1].split("</p>")[0])  # noqa: E731
    assert BEFORE in answer(before) and AFTER in answer(after)
    # both versions are drawn and listed, the restating 10-Q among the filings
    assert before.text.count('class="box') == 2 and RESTATED_IN in before.text
    # the point picked stays in the form (and so in the address the form submits)
    assert 'value="2016-05-09"' in before.text


def test_key_known_at_before_the_load_knows_nothing(http, world):
    first = world["mem"].history(world["a"], entity=TESLA, attribute=ASSETS,
                                 period=Period(end=dt.date(2015, 12, 31)))[0]
    early = (first.recorded_at - dt.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    page = http.get(f"{KEY}&cutoff=2016-05-11&known_at={early}")
    assert page.status_code == 200 and "not found" in _text(page.text)


def test_key_without_a_period_lists_the_keys(http):
    page = http.get(f"/key?entity={TESLA}&attribute={ASSETS}")
    assert page.status_code == 200 and "pick one" in page.text
    assert "period=2015-12-31" in page.text


def test_search_finds_facts_and_links_their_key(http):
    page = http.get("/", params={"q": "Tesla us-gaap:Assets", "type": "fact"})
    assert page.status_code == 200
    assert f"attribute={ASSETS}".replace(":", "%3A") in page.text


def test_source_shows_impact_preview_and_writes_nothing(http, world):
    mem, a = world["mem"], world["a"]
    filing = world["derived"]
    upstream = mem.lineage(a, filing.version_id, "upstream")
    source = sorted(n[2:] for n, k in upstream.nodes(data="kind") if k == "source")[-1]
    before = mem.counts(a)
    page = http.get("/source", params={"id": source})
    assert page.status_code == 200
    text = _text(page.text)
    assert "Recompute order" in text and "retained_per_100" in text and "invalid" in text
    assert page.text.count('class="node') > 3  # the impact graph is drawn
    assert mem.counts(a) == before and mem.source(a, source).retracted_at is None


def test_lineage_up_and_down(http, world):
    derived = world["derived"].version_id
    up = http.get("/lineage", params={"version": derived})
    assert up.status_code == 200 and 'class="node source' in up.text and "retained_per_100" in up.text
    graph = world["mem"].lineage(world["a"], derived, "upstream")
    an_input = next(n[2:] for n in graph.predecessors(next(graph.predecessors(f"f:{derived}"))))
    assert f"/lineage?version={an_input}" in up.text  # each node links to its own lineage
    down = http.get("/lineage", params={"version": an_input, "direction": "downstream"})
    assert down.status_code == 200 and 'class="node fact origin' in down.text
    assert f"/lineage?version={derived}" in down.text


def test_lineage_as_recorded_by_a_known_at_keeps_it_in_its_links(http, world):
    derived = world["mem"].versions(world["a"], [world["derived"].version_id])[0]
    at = derived.recorded_at.isoformat()
    up = http.get("/lineage", params={"version": derived.version_id, "known_at": at})
    assert up.status_code == 200 and 'class="node source' in up.text
    assert "known_at=" + urllib.parse.quote(at) in up.text.replace("&amp;", "&")  # its links keep the time
    early = (derived.recorded_at - dt.timedelta(microseconds=1)).isoformat()
    gone = http.get("/lineage", params={"version": derived.version_id, "known_at": early})
    assert gone.status_code == 404 and "as recorded by" in gone.text


def test_lineage_lists_its_versions_a_page_at_a_time(http, world, monkeypatch):
    from graphmem.ui import pages

    monkeypatch.setattr(pages, "ROWS_PER_PAGE", 1)
    derived = world["derived"].version_id
    facts = sum(1 for _, k in world["mem"].lineage(world["a"], derived).nodes(data="kind") if k == "fact")
    rows = lambda r: r.text.split("<caption>")[1].split("</table>")[0].count("<tr><td>")  # noqa: E731
    first = http.get("/lineage", params={"version": derived})
    assert rows(first) == 1 and f"page 1 of {facts}" in first.text
    last = http.get("/lineage", params={"version": derived, "page": facts, "path": "1"})  # a path= of its own: no 500
    assert rows(last) == 1 and f"page {facts} of {facts}" in last.text and "earlier" in last.text
    assert http.get("/lineage", params={"version": derived, "page": facts + 1}).status_code == 400


def test_a_long_key_recorded_at_once_pages_in_time_order(world, monkeypatch):
    """40 filings of one key recorded in one transaction: page 1 draws the 20 first
    public, page 2 the 20 after (not 20 of them in version-id order, whose ticks would
    interleave with the next page's)."""
    from graphmem.ui import pages

    monkeypatch.setattr(pages, "VERSIONS_PER_PAGE", 20)
    mem, d = world["mem"], Scope(tenant=f"test-ui-long-{uuid.uuid4().hex[:12]}")
    mem.put_entity(d, Entity(id="big"))
    first = dt.datetime(2020, 1, 1, 21, tzinfo=dt.UTC)
    sources = [Source(id=f"f{i:02d}", kind="filing", authority="primary", publisher="sec",
                      available_by=first + dt.timedelta(days=i)) for i in range(40)]
    mem.record(d, sources=sources, items=[
        FactIn(entity="big", attribute="rev", unit="USD", value=Decimal(1000 + i),
               period=Period(end=dt.date(2019, 12, 31)), sources=(s.id,)) for i, s in enumerate(sources)])
    http = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1")
    public = []
    for page in (1, 2):
        shown = http.get("/key", params={"entity": "big", "attribute": "rev", "period": "2019-12-31", "page": page,
                                         "cutoff": "2020-01-15"})
        assert shown.status_code == 200 and f"page {page} of 2" in shown.text
        table = shown.text.split('class="versions"', 1)[1].split("</table>", 1)[0]
        public.append(re.findall(r"<tr class=[^>]*>\s*<td>[^<]*</td><td>([^<]+)</td>", table))
    assert public[0] == [(first + dt.timedelta(days=i)).strftime("%Y-%m-%d %H:%M:%SZ") for i in range(20)]
    assert len(public[1]) == 20 and max(public[0]) < min(public[1])


def test_screen_steps_through_cutoffs(http):
    page = http.get("/screen", params={"attribute": ASSETS, "frame": "CY2015Q4I", "cutoff": "2016-05-09"})
    assert page.status_code == 200 and BEFORE in page.text
    later = re.search(r'id="later" href="([^"]+)"', page.text).group(1).replace("&amp;", "&")
    assert "cutoff=2016-08-09" in later
    assert AFTER in http.get(later).text


@pytest.mark.parametrize("asked", [{"attribute": ASSETS}, {"item": "total_assets"}])  # a line item: its concept
def test_panel_steps_through_cutoffs_and_links_each_key(http, asked):
    page = http.get("/panel", params={**asked, "frames": "CY2015Q4I", "cutoffs": "2016-05-09,2016-05-11"})
    assert page.status_code == 200, page.text
    table = page.text.split('id="panel"', 1)[1].split("</table>", 1)[0]
    row = next(r for r in table.split("<tr>") if TESLA in r)
    assert row.index(BEFORE) < row.index(AFTER)  # the restatement, cutoff by cutoff
    links = [x.replace("&amp;", "&") for x in re.findall(r'href="(/key[^"]+)"', row)]
    assert len(links) == 2 and "cutoff=2016-05-11" in links[1]
    assert AFTER in http.get(links[1]).text  # the key page at that cutoff answers the same


def test_panel_takes_the_command_lines_ranges_and_is_linked(http):
    page = http.get("/panel", params={"attribute": ASSETS, "latest": "instant",
                                      "cutoffs": "2016-01-01..2016-06-30:quarterly"})
    assert page.status_code == 200, page.text
    assert ">2016-03-31<" in page.text and ">2016-06-30<" in page.text
    # each cutoff's latest instant: the 2015 year end, then the first quarter of 2016
    assert re.search(BEFORE + r".*CY2015Q4I.*CY2016Q1I", _text(page.text.split('id="panel"', 1)[1]))
    assert 'href="/panel"' in page.text  # the nav bar
    screen = http.get("/screen", params={"attribute": ASSETS, "frame": "CY2015Q4I", "cutoff": "2016-05-09"})
    link = re.search(r'id="to-panel" href="([^"]+)"', screen.text).group(1).replace("&amp;", "&")
    assert BEFORE in http.get(link).text


def _link(page, name):
    """The href of the element with id ``name`` (None when the page has none)."""
    found = re.search(rf'id="{name}" href="([^"]+)"', page.text)
    return found.group(1).replace("&amp;", "&") if found else None


def _cutoffs(link):
    return urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["cutoffs"][0].split(",")


def test_screen_as_a_panel_keeps_a_cutoff_within_a_day(http):
    """Noon of 2016-05-10, before the 10-Q (public 15:27Z): the panel the screen links
    answers at that time, not at the end of the day, when the restatement was public."""
    screen = http.get("/screen", params={"attribute": ASSETS, "frame": "CY2015Q4I", "cutoff": "2016-05-10T12:00:00Z"})
    assert BEFORE in screen.text and AFTER not in screen.text
    link = _link(screen, "to-panel")
    assert _cutoffs(link) == ["2016-02-10T12:00:00Z", "2016-05-10T12:00:00Z", "2016-08-10T12:00:00Z"]
    table = http.get(link).text.split('id="panel"', 1)[1]
    row = _text(next(r for r in table.split("<tr>") if TESLA in r))
    assert row.index(BEFORE) < row.index(AFTER) and row.count(BEFORE) == 1  # 05-10 noon: the 10-K's value


def test_screen_by_period_offers_no_panel(http):
    """A panel needs frames: a screen by period= has none to hand it."""
    screen = http.get("/screen", params={"attribute": ASSETS, "period": "2015-12-31", "cutoff": "2016-05-09"})
    assert screen.status_code == 200 and BEFORE in screen.text
    assert _link(screen, "to-panel") is None
    by_frame = http.get("/screen", params={"attribute": ASSETS, "frame": "CY2015Q4I", "cutoff": "2016-05-09"})
    assert http.get(_link(by_frame, "to-panel")).status_code == 200


@pytest.mark.parametrize(("cutoff", "step", "earlier", "later"), [
    ("2016-09-30", "3m", "2016-06-30", "2016-12-31"),  # a quarter end stays one
    ("2015-12-31", "3m", "2015-09-30", "2016-03-31"),
    ("2016-02-29", "1m", "2016-01-31", "2016-03-31"),
    ("2016-01-30", "1m", "2015-12-30", "2016-02-29"),  # not a month end: the same day, or the month's last
    ("2016-05-10T12:00:00Z", "1y", "2015-05-10T12:00:00Z", "2017-05-10T12:00:00Z")])
def test_screen_steps_keep_month_ends(http, cutoff, step, earlier, later):
    page = http.get("/screen", params={"attribute": ASSETS, "frame": "CY2015Q4I", "cutoff": cutoff, "step": step})
    assert page.status_code == 200
    linked = {n: urllib.parse.parse_qs(urllib.parse.urlsplit(_link(page, n)).query)["cutoff"][0]
              for n in ("earlier", "later")}
    assert linked == {"earlier": earlier, "later": later}


@pytest.mark.parametrize(("cutoff", "step", "offered"), [
    ("9999-12-31", "3m", {"earlier"}), ("0001-01-01", "3m", {"later"}), ("9999-11-15", "1y", {"earlier"})])
def test_screen_near_the_ends_of_time_offers_the_steps_it_can(http, cutoff, step, offered):
    page = http.get("/screen", params={"attribute": ASSETS, "frame": "CY2015Q4I", "cutoff": cutoff, "step": step})
    assert page.status_code == 200, page.text
    assert {n for n in ("earlier", "later") if _link(page, n)} == offered
    assert http.get(_link(page, "to-panel")).status_code == 200


def test_links_to_a_key_keep_the_pages_times(http):
    """From a screen or a search as of 2016-05-09 the key answers as of 2016-05-09 (the
    10-K's value), not as of now (the restated one)."""
    screen = http.get("/screen", params={"attribute": ASSETS, "frame": "CY2015Q4I", "cutoff": "2016-05-09"})
    found = http.get("/", params={"q": "Tesla us-gaap:Assets", "type": "fact", "cutoff": "2016-05-09",
                                  "known_at": "2099-01-01T00:00:00Z"})
    for page in (screen, found):
        links = [x.replace("&amp;", "&") for x in re.findall(r'href="(/key\?[^"]+)"', page.text)]
        link = next(x for x in links if "period=2015-12-31" in x and "unit=USD" in x)
        assert "cutoff=2016-05-09" in link and "known_at=" in link
        assert BEFORE in _text(http.get(link).text.split('id="value"')[1].split("</p>")[0])


def test_links_to_a_filing_keep_the_pages_known_at(http, world):
    """A filing's page (its impact) opened from a key's answer or a search's hit is read
    as recorded by the known_at they answered at, not as of now (the key's table of
    every version, recorded at any time, links them as of now)."""
    at = "2099-01-01T00:00:00Z"
    key = http.get(KEY + f"&cutoff=2016-05-11&known_at={at}").text
    answer = key.split("<p>filings: ")[1].split("</p>")[0]
    found = http.get("/", params={"q": "Tesla us-gaap:Assets", "type": "fact", "known_at": at}).text
    by_id = http.get("/", params={"q": RESTATED_IN, "known_at": at}).text
    for html in (answer, found, by_id):
        links = [x.replace("&amp;", "&") for x in re.findall(r'href="(/source\?[^"]+)"', html)]
        assert links and all("known_at=2099-01-01T00%3A00%3A00Z" in x for x in links), links


def test_panel_headers_tell_two_cutoffs_of_one_day_apart(http):
    page = http.get("/panel", params={"attribute": ASSETS, "frames": "CY2015Q4I",
                                      "cutoffs": "2016-05-10T12:00:00Z,2016-05-10"})
    heads = re.findall(r"<th>([^<]*)</th>", page.text.split('id="panel"', 1)[1].split("</tr>", 1)[0])
    assert heads[2:] == ["2016-05-10T12:00:00Z", "2016-05-10"]


def test_agent_memory_candidates_snapshots_and_trace(http, world):
    agent = http.get("/agent")
    assert agent.status_code == 200
    assert "no-such-filing" in agent.text and world["snapshot"] in agent.text
    snap = http.get("/agent/snapshot", params={"id": world["snapshot"], "memory": world["hit"]})
    assert snap.status_code == 200 and 'id="trace"' in snap.text
    assert re.search(r"(included|cut)", _text(snap.text.split('id="trace"')[1]))


def test_another_tenants_ids_show_nothing(other, world):
    assert "Nothing recorded" in other.get(KEY + "&cutoff=2016-05-11").text
    lost = other.get("/lineage", params={"version": world["derived"].version_id})
    assert lost.status_code == 404 and world["derived"].version_id in lost.text
    assert other.get("/source", params={"id": RESTATED_IN}).status_code == 404
    assert other.get("/agent/snapshot", params={"id": world["snapshot"]}).status_code == 404
    hits = lambda r: r.text.split("</form>", 1)[1]  # noqa: E731  (the form echoes the query)
    found = other.get("/", params={"q": "Tesla us-gaap:Assets"})
    assert found.status_code == 200 and TESLA not in hits(found) and ASSETS not in hits(found)
    assert TESLA not in hits(other.get("/", params={"q": TESLA}))
    assert RESTATED_IN not in hits(other.get("/", params={"q": RESTATED_IN}))
    agent = other.get("/agent")
    assert "no-such-filing" not in agent.text and world["snapshot"] not in agent.text


@pytest.mark.parametrize(("path", "named"), [
    (KEY + "&cutoff=yesterday", "cutoff: not an ISO date"),
    (KEY + "&period=2015-13-31", "period: expected DATE"),
    ("/key?attribute=x", "entity: required"),
    ("/source?id=" + "x" * 3000, "id: "),
    ("/lineage?version=v&direction=sideways", "direction: must be one of"),
    ("/lineage?version=v&depth=-1", "depth: an integer"),
    ("/screen?attribute=a&frame=CY20X", "frame"),
    ("/?q=a&limit=1000", "limit: an integer"),
    (KEY + "&page=99", "page: an integer from 1 to 1"),
    (f"/panel?attribute={ASSETS}&frames=CY2015Q4I&cutoffs=2016-01-01..2016-12-31:weekly", "cutoffs: the step"),
    (f"/panel?attribute={ASSETS}&frames=CY2015Q1..CY2016&cutoffs=2016-05-09", "frames: "),
    (f"/panel?attribute={ASSETS}&frames=CY2015Q4I&cutoffs=/etc/passwd", "cutoffs: not an ISO date"),
    (f"/panel?attribute={ASSETS}&cutoffs=2016-05-09", "frames: give exactly one"),
    (f"/panel?attribute={ASSETS}&latest=decade&cutoffs=2016-05-09", "latest: must be one of"),
    ("/panel?item=nothing&latest=year&cutoffs=2016-05-09", "item: "),
    # times whose UTC is outside the years 1 to 9999
    (KEY + "&cutoff=0001-01-01T00:00:00%2B01:00", "cutoff: 0001-01-01T00:00:00+01:00 is outside"),
    (KEY + "&known_at=9999-12-31T23:00:00-05:00", "known_at: 9999-12-31T23:00:00-05:00 is outside"),
    ("/?q=Tesla&cutoff=9999-12-31T23:00:00-05:00", "cutoff: "),
    (f"/source?id={RESTATED_IN}&known_at=0001-01-01T00:00:00%2B01:00", "known_at: "),
    (f"/screen?attribute={ASSETS}&frame=CY2015Q4I&cutoff=0001-01-01T00:00:00%2B01:00", "cutoff: "),
    (f"/panel?attribute={ASSETS}&frames=CY2015Q4I&cutoffs=2016-05-09&known_at=0001-01-01T00:00:00%2B01:00",
     "known_at: "),
    (f"/panel?attribute={ASSETS}&frames=CY2015Q4I&cutoffs=2016-05-09,9999-12-31T23:00:00-05:00", "cutoffs: "),
])
def test_bad_parameters_get_a_message_not_a_trace(http, path, named):
    page = http.get(path)
    assert page.status_code == 400, page.text
    assert named in page.text and "Traceback" not in page.text


@pytest.mark.parametrize("path", [KEY, KEY.replace("&period=2015-12-31", ""), "/screen",
                                  f"/screen?attribute={ASSETS}&frame=CY2015Q4I", "/agent", "/source?id=x", "/",
                                  f"/panel?attribute={ASSETS}&latest=year&cutoffs=2016-05-09"])
def test_a_parameter_named_path_is_not_a_server_error(http, path):
    """The pages link back to themselves with the request's own parameters (the lineage
    page: test_lineage_lists_its_versions_a_page_at_a_time)."""
    assert http.get(path + ("&" if "?" in path else "?") + "path=1&page=1").status_code < 500


def test_read_only_and_loopback_hosts(http):
    assert http.post("/key", data={"entity": TESLA}).status_code == 405
    assert http.get("/", headers={"host": "attacker.example"}).status_code == 400
    for host in ("127.0.0.1:8765", "localhost:8765", "[::1]:8765"):
        assert http.get("/", headers={"host": host}).status_code == 200, host
    assert "content-security-policy" in http.get("/").headers


def test_off_loopback_the_cookie_is_secure_and_a_bound_address_is_a_host(world):
    tokens = {digest(TOKEN_A): Caller(world["a"], "a")}
    client = TestClient(build_app(world["mem"], tokens=tokens, secure=True), base_url="http://10.0.0.5")
    login = client.get(f"/?token={TOKEN_A}", follow_redirects=False)
    assert login.status_code == 303 and "; secure" in login.headers["set-cookie"].lower()
    bound = TestClient(build_app(world["mem"], scope=world["a"], hosts=allowed_hosts("127.0.0.2")),
                       base_url="http://127.0.0.2:8765")
    assert bound.get("/").status_code == 200
    assert allowed_hosts("0.0.0.0") is None and "[::1]" in allowed_hosts("::1")


def test_tokens_pick_the_scope(world):
    tokens = {digest(TOKEN_A): Caller(world["a"], "a"), digest(TOKEN_B): Caller(world["b"], "b")}
    client = TestClient(build_app(world["mem"], tokens=tokens), base_url="http://127.0.0.1")
    assert client.get(KEY).status_code == 401
    assert client.get(KEY, headers={"authorization": "Bearer not-a-known-token"}).status_code == 401
    assert AFTER in client.get(KEY, headers={"authorization": f"Bearer {TOKEN_A}"}).text
    assert "Nothing recorded" in client.get(KEY, headers={"authorization": f"Bearer {TOKEN_B}"}).text
    login = client.get(KEY + f"&token={TOKEN_A}", follow_redirects=False)
    assert login.status_code == 303 and "token" not in login.headers["location"]
    cookie = login.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie  # plain http here
    unknown = client.get(KEY + "&token=not-a-known-token", follow_redirects=False)
    assert unknown.status_code == 401 and "set-cookie" not in unknown.headers
    assert AFTER in client.get(login.headers["location"]).text  # the cookie now carries it


EVIL = {"entity": '"><script>alert(1)</script>', "name": "<img src=x onerror=alert(2)>",
        "source": 's-"><img src=x onerror=alert(3)>', "title": '"><script>alert(4)</script>',
        "unit": '"><img src=x onerror=alert(5)>', "attribute": "x:<script>alert(6)</script>"}


@pytest.fixture(scope="module")
def hostile(world):
    """A tenant whose names, titles, URI and unit are markup; served on loopback."""
    mem, c = world["mem"], Scope(tenant=f"test-ui-evil-{uuid.uuid4().hex[:12]}")
    mem.put_entity(c, Entity(id=EVIL["entity"], name=EVIL["name"]))
    mem.record_source(c, Source(id=EVIL["source"], kind="filing", authority="primary", title=EVIL["title"],
                                uri="javascript:alert(7)", available_by=dt.datetime(2016, 1, 1, tzinfo=dt.UTC)))
    version = mem.assert_fact(c, FactIn(entity=EVIL["entity"], attribute=EVIL["attribute"], unit=EVIL["unit"],
                                        value=Decimal("1"), period=Period(end=dt.date(2015, 12, 31)),
                                        sources=(EVIL["source"],)))
    client = TestClient(build_app(mem, scope=c), base_url="http://127.0.0.1")
    return client, version


def test_markup_in_names_titles_and_units_is_escaped(hostile):
    http, version = hostile
    paths = [("/", {"q": EVIL["entity"]}), ("/", {"q": EVIL["source"]}), ("/source", {"id": EVIL["source"]}),
             ("/key", {"entity": EVIL["entity"], "attribute": EVIL["attribute"], "period": "2015-12-31"}),
             ("/lineage", {"version": version.version_id})]
    for path, params in paths:
        page = http.get(path, params=params)
        assert page.status_code == 200, (path, page.text)
        assert "<script>alert" not in page.text and "<img src=x" not in page.text, path
        assert 'href="javascript:' not in page.text.lower(), path
    shown = http.get("/source", params={"id": EVIL["source"]}).text
    assert "&lt;script&gt;alert(4)" in shown and "javascript:alert(7)" in shown  # shown as text, not a link
    assert "&lt;img src=x onerror=alert(5)&gt;" in http.get("/lineage", params={"version": version.version_id}).text


@pytest.mark.parametrize(("value", "shown"), [
    (Decimal("1E-7"), "0.0000001"), (Decimal("8092460000"), "8,092,460,000"), (Decimal("0.35"), "0.35"),
    (Decimal("1.2E+4"), "12,000"), (Decimal("-1234.5"), "-1,234.5"), (None, "")])
def test_numbers_read_plainly(value, shown):
    from graphmem.ui.pages import number

    assert number(value) == shown


def test_each_plot_cell_shows_what_as_of_answers_there(world):
    """The picture draws liveness itself (plot._spans): at every time anything happened
    to the key (and a second either side) the answer from as_of (the version, or a
    conflict's candidates) must be among the shapes under the point the page draws, and
    a point under none must answer nothing. Key "a": one version stays, one is
    invalidated, one's only source is retracted. Key "two": one version from two
    filings (January, March), the January one retracted - live from March after the
    retraction. Key "again": the only source retracted, then the value filed again."""
    from graphmem.ui import pages, plot

    mem, d = world["mem"], Scope(tenant=f"test-ui-plot-{uuid.uuid4().hex[:12]}")
    period = Period(end=dt.date(2019, 12, 31))
    mem.put_entity(d, Entity(id="e"))

    def filed(attribute, value, source, month):
        mem.record_source(d, Source(id=source, kind="filing", authority="primary", publisher=source,
                                    available_by=dt.datetime(2020, month, 10, tzinfo=dt.UTC)))
        return mem.assert_fact(d, FactIn(entity="e", attribute=attribute, unit="USD", period=period,
                                         value=Decimal(value), sources=(source,)))

    made = [filed("a", month, f"s{month}", month) for month in (1, 2, 3)]
    mem.invalidate(d, made[1].version_id, "wrong")
    mem.retract_source(d, "s3", reason="withdrawn")
    filed("two", 1, "jan", 1)
    filed("two", 1, "mar", 3)
    mem.retract_source(d, "jan", reason="withdrawn")
    filed("again", 1, "c", 1)
    mem.retract_source(d, "c", reason="withdrawn")
    filed("again", 1, "d", 2)
    ended = set()
    for attribute in ("a", "two", "again"):
        versions = mem.history(d, entity="e", attribute=attribute, period=period)
        retracted = pages._retractions(mem, d, versions)
        # every time anything happened (not only the plot's own ticks), a second either side
        cutoffs = {t + dt.timedelta(seconds=n) for v in versions for e in v.sources
                   for t in (v.available_by, e.available_by) for n in (-1, 0, 1)}
        known = {t + dt.timedelta(seconds=n) for v in versions for t in (v.recorded_at, *retracted.values(),
                 *(e.recorded_at for e in v.sources), *(r.recorded_at for r in v.lifecycle)) for n in (-1, 0, 1)}
        for cutoff in sorted(cutoffs):
            for known_at in sorted(known):
                drawn = plot.versions_plot(versions, cutoff, known_at, retracted)
                covering = {b.version.version_id for b in drawn.boxes if _covers(b, *drawn.point)}
                answer = mem.as_of(d, entity="e", attribute=attribute, period=period, cutoff=cutoff,
                                   known_at=known_at)
                answered = {v.version_id for v in (answer.version, *answer.candidates) if v}
                assert answered <= covering and bool(answered) == bool(covering), (attribute, cutoff, known_at)
                ended |= {b.ended for b in drawn.boxes}
    assert ended == {None, "invalidated", "retracted"}


def test_the_plot_draws_a_restatement_only_where_it_is_live(world, tmp_path):
    """The restating 10-Q retracted: at cutoff 2016-06-01 the restated value is not live
    (its other filings, the 10-Qs of August and November, are not public yet), so the
    point sits in the 10-K's shape, which as_of answers; the restated one starts at the
    August column in the rows after the retraction."""
    mem, d = world["mem"], Scope(tenant=f"test-ui-retract-{uuid.uuid4().hex[:12]}")
    sec.load(mem, d, _tesla_2016(tmp_path), FIXTURES / "submissions-CIK0001318605-tesla.json")
    mem.retract_source(d, RESTATED_IN, reason="withdrawn")
    page = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1").get(KEY + "&cutoff=2016-06-01")
    assert page.status_code == 200 and BEFORE in _text(page.text.split('id="value"')[1].split("</p>")[0])
    svg = page.text.split('id="plot"', 1)[1].split("</svg>", 1)[0]
    point = re.search(r'<circle class="point" cx="([-\d.]+)" cy="([-\d.]+)"', svg)
    cx, cy = float(point.group(1)), float(point.group(2))
    shapes = {_text(t).strip(): (cls, d_) for cls, d_, t in
              re.findall(r'<path class="box([^"]*)" d="([^"]+)"><title>(.*?)</title>', svg)}
    inside = {title.split(" · ")[0] for title, (_, outline) in shapes.items() if _inside(outline, cx, cy)}
    assert inside == {BEFORE + " USD"}
    chosen = next(title for title, (cls, _) in shapes.items() if "chosen" in cls)
    assert chosen.startswith(BEFORE)
    # the top row (after the retraction): the restated value from August's column on
    ticks = {at[:10]: float(x) for x, at in re.findall(r'<line class="tick" x1="([\d.]+)"[^>]*/><text class="xl"[^>]*>'
                                                       r"([^<]+)</text>", svg)}
    col = float(re.search(r'data-col="([\d.]+)"', page.text).group(1))
    top = {day: {t.split(" · ")[0] for t, (_, outline) in shapes.items() if _inside(outline, x + col / 2, 1)}
           for day, x in ticks.items()}
    assert top == {"2016-02-24": {BEFORE + " USD"}, "2016-05-10": {BEFORE + " USD"},
                   "2016-08-05": {BEFORE + " USD", AFTER + " USD"}, "2016-11-02": {BEFORE + " USD", AFTER + " USD"}}


def _inside(outline: str, x: float, y: float) -> bool:
    """Whether (x, y) is inside an SVG path of closed polygons (M x,y L x,y ... Z), by
    the crossings of a ray to the right."""
    crossings = 0
    for ring in re.findall(r"M([^Z]+)Z", outline):
        points = [tuple(map(float, p.split(","))) for p in re.findall(r"[-\d.]+,[-\d.]+", ring)]
        for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1], strict=True):
            if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
                crossings += 1
    return crossings % 2 == 1


# ---------------------------------------------------------------- browser

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port until the block ends: its URL."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def served(world):
    """One uvicorn server for the module, both tenants behind their tokens."""
    tokens = {digest(TOKEN_A): Caller(world["a"], "a"), digest(TOKEN_B): Caller(world["b"], "b")}
    with serving(build_app(world["mem"], tokens=tokens)) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent: apt-get install -y chromium (Debian's package)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def _session(browser, served, token):
    context = browser.new_context(viewport={"width": 1100, "height": 860})
    context.set_default_timeout(120_000)  # a loaded machine: pages wait on the database
    page = context.new_page()
    page.goto(f"{served}/?token={token}")
    return page


def _shot(page, name):
    where = os.environ.get("GRAPHMEM_UI_SHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        path = Path(where) / f"{name}.png"
        page.screenshot(path=str(path))
        from PIL import Image  # pillow comes with the png extra: a 128-colour PNG is a third of the size

        Image.open(path).quantize(colors=128).save(path, optimize=True)


def test_browser_moves_the_cutoff_across_the_restatement(browser, served, world):
    page = _session(browser, served, TOKEN_A)
    page.goto(served + KEY + "&cutoff=2016-05-09")
    assert BEFORE in page.inner_text("#value")
    _shot(page, "key")
    page.fill("#cutoff", "2016-05-11")
    page.click("#pick button")
    page.wait_for_url(re.compile(r"cutoff=2016-05-11"))
    assert AFTER in page.inner_text("#value")
    # a click in the plot's first column (before either filing) finds nothing public yet
    box = page.locator("#plot").bounding_box()
    left, top, col = (float(page.get_attribute("#plot", f"data-{a}")) for a in ("left", "top", "col"))
    page.mouse.click(box["x"] + left + col / 2, box["y"] + top + 20)
    page.wait_for_url(re.compile(r"cutoff=2016-02-24T"))
    assert "not found" in page.inner_text("#value")
    # and a click in the last column, top row, gets the restated value back
    page.mouse.click(box["x"] + left + 2.5 * col, box["y"] + top + 20)
    page.wait_for_url(re.compile(r"cutoff=2016-05-10T"))
    assert AFTER in page.inner_text("#value")
    assert page.evaluate("document.getElementsByTagName('*').length") < 400
    # dragging the point: it follows the pointer and the form shows the cell under it
    # while the button is down; the release asks for that cell (middle column: the
    # original filing public, the restatement not yet)
    first = (box["x"] + left + col / 2, box["y"] + top + 20)
    page.mouse.move(*first)
    page.mouse.down()
    page.mouse.move(box["x"] + left + 1.5 * col, box["y"] + top + 20, steps=5)
    middle = json.loads(page.get_attribute("#plot", "data-x"))[1]  # the 10-K's filing time
    assert page.input_value("#cutoff") == middle and "cutoff=2016-05-10T" in page.url
    assert col < float(page.get_attribute("#plot .point", "cx")) < 2 * col  # the point followed
    page.mouse.up()
    page.wait_for_url(lambda url: "cutoff=" + middle in urllib.parse.unquote(url))
    assert BEFORE in page.inner_text("#value")
    page.context.close()


def test_browser_opens_lineage_and_impact(browser, served, world):
    page = _session(browser, served, TOKEN_A)
    page.goto(f"{served}/lineage?version={world['derived'].version_id}")
    assert page.locator(".graph .node").count() > 5
    _shot(page, "lineage")
    page.locator(".graph .node.source").first.click()
    page.wait_for_url(re.compile(r"/source\?id="))
    assert "Recompute order" in page.inner_text("#order")
    assert page.locator(".graph .node.invalid").count() > 0
    _shot(page, "source")
    extra = (("search", "/?q=Tesla+us-gaap%3AAssets"), ("agent", "/agent"),
             ("screen", f"/screen?attribute={ASSETS}&frame=CY2015Q4I&cutoff=2016-05-11"),
             ("snapshot", f"/agent/snapshot?id={world['snapshot']}"))
    for name, path in extra if os.environ.get("GRAPHMEM_UI_SHOTS") else ():
        page.goto(served + path)
        _shot(page, name)
    page.context.close()


def test_browser_other_tenant_and_bad_parameters(browser, served, world):
    page = _session(browser, served, TOKEN_B)
    page.goto(f"{served}/lineage?version={world['derived'].version_id}")
    assert "no version" in page.inner_text("#error")
    page.goto(served + KEY + "&cutoff=not-a-date")
    assert "cutoff: not an ISO date" in page.inner_text("#error")
    assert "Traceback" not in page.content()
    page.context.close()


def test_history_index_and_snapshot_listing_page_what_the_full_reads_return(world):
    mem, a = world["mem"], world["a"]
    full = mem.history(a, entity=TESLA, attribute=ASSETS)
    index = mem.history_index(a, entity=TESLA, attribute=ASSETS)
    # the same versions, key by key; within a key in transaction time, then availability
    times = {v.version_id: (v.recorded_at, v.available_by, v.version_id) for v in full}
    assert sorted(i for r in index for i in r["version_ids"]) == sorted(times)
    for r in index:
        assert r["version_ids"] == sorted(r["version_ids"], key=times.__getitem__)
        assert set(r["version_ids"]) == {v.version_id for v in full if (v.period.text, v.unit) ==
                                         (r["period"], r["unit"])}
    assert [(r["period"], r["unit"]) for r in index] == list(dict.fromkeys((v.period.text, v.unit) for v in full))
    assert mem.history_index(a, entity=TESLA, attribute=ASSETS, unit="shares") == []
    assert [c.snapshot_id for c in mem.context_snapshots(a, task_id="T-ui")] == [world["snapshot"]]
    assert mem.context_snapshots(a, task_id="T-ui", offset=1) == []
    assert mem.context_snapshots(world["b"]) == []


def test_cli_serves_no_public_address_without_tokens(migrated):
    from click.testing import CliRunner
    from procs import env  # test helpers beside this file

    from graphmem.cli import main

    done = CliRunner().invoke(main, ["ui", "--host", "0.0.0.0", "--tenant", "nobody"], env=env(migrated))
    assert done.exit_code == 2  # a usage error
    assert done.stderr == ("graphmem: error: --tokens: 0.0.0.0 is not a loopback address: serving it needs a "
                           "tokens file (each bearer token maps to one scope)\n")


@pytest.mark.parametrize("scoping", [("--tenant", "t"), ("--scope", "user=u")])
def test_cli_refuses_a_scope_beside_tokens(tmp_path, scoping):
    from click.testing import CliRunner

    from graphmem.cli import main

    tokens = tmp_path / "tokens.toml"
    tokens.write_text("")
    done = CliRunner().invoke(main, ["ui", "--tokens", str(tokens), *scoping])
    assert done.exit_code == 2 and "with --tokens each token's scope is read" in done.output


def _covers(box, x: float, y: float) -> bool:
    """Whether a version's drawn shape holds the point (its runs of live cells)."""
    return any(px <= x < px + w and py <= y < py + h for px, py, w, h in box.parts)
