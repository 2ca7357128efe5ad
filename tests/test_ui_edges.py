"""The web view at its edges: what an analyst sees, against a real Neo4j and, for what
the browser itself does, Debian's headless Chromium (test_ui's fixtures and helpers).

One tenant of its own: a 10-K and a restating 10-Q of one publisher, a key recorded
under the default definition beside a non-GAAP one, and one without a unit beside one
in people; two independent filings that disagree (a conflict); a derivation from a
filing later erased.
"""

from __future__ import annotations

import datetime as dt
import re
import urllib.parse
import uuid
from decimal import Decimal

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402
from test_ui import _text, browser, serving  # noqa: E402,F401  (browser: a fixture)

from graphmem import Entity, FactIn, Period, Scope, Source  # noqa: E402
from graphmem.ui import build_app  # noqa: E402

UTC = dt.UTC
YEAR_END = Period(end=dt.date(2015, 12, 31))


def _filing(mem, scope, source_id, day, publisher="E", title=None):
    mem.record_source(scope, Source(id=source_id, kind="filing", authority="primary", publisher=publisher,
                                    title=title, available_by=dt.datetime(2016, *day, 21, tzinfo=UTC)))


def _fact(mem, scope, attribute, value, source, unit="USD", definition=""):
    return mem.assert_fact(scope, FactIn(entity="E", attribute=attribute, unit=unit, definition=definition,
                                         value=Decimal(value), period=YEAR_END, sources=(source,)))


@pytest.fixture(scope="module")
def review(migrated):
    s = Scope(tenant=f"test-review-ui-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        mem.put_entity(s, Entity(id="E", name="E Corp"))
        _filing(mem, s, "k", (2, 24), title="10-K 2015")
        _filing(mem, s, "q", (5, 10), title="10-Q")
        _filing(mem, s, "one", (3, 1), publisher="auditor-one")
        _filing(mem, s, "two", (3, 1), publisher="auditor-two")
        _filing(mem, s, "gone", (3, 2), title="to be erased")
        _fact(mem, s, "rev", 100, "k")
        _fact(mem, s, "rev", 90, "q")  # the restatement
        _fact(mem, s, "rev", 120, "k", definition="non-GAAP")
        _fact(mem, s, "assets", 100, "k")
        _fact(mem, s, "assets", 90, "q")  # restated, and of one definition and unit
        _fact(mem, s, "staff", 7, "k", unit="")
        _fact(mem, s, "staff", 8, "k", unit="people")
        _fact(mem, s, "cost", 5, "one")
        _fact(mem, s, "cost", 6, "two")  # independent and equal in authority: a conflict
        erased = _fact(mem, s, "gone", 7, "gone")
        derived = mem.derive(s, method="double", method_version="1", params={}, inputs={"x": erased.version_id},
                             output=FactIn(entity="E", attribute="twice", unit="USD", value=Decimal(14),
                                           period=YEAR_END))
        mem.erase(s, source_id="gone", reason="a data subject asked")
        http = TestClient(build_app(mem, scope=s), base_url="http://127.0.0.1", raise_server_exceptions=False)
        yield {"mem": mem, "scope": s, "http": http, "erased": erased, "derived": derived}


def _links(page, prefix):
    return [x.replace("&amp;", "&") for x in re.findall(rf'href="({re.escape(prefix)}[^"]*)"', page.text)]


def _value(page):
    return _text(page.text.split('id="value"', 1)[1].split("</p>", 1)[0]).strip(" >")


# ---------------------------------------------------------------- keys


@pytest.mark.parametrize(("attribute", "shown"), [("rev", "100 USD"), ("staff", "7")])
def test_a_key_of_the_default_definition_or_no_unit_opens_beside_its_siblings(review, attribute, shown):
    """Two keys of one period: the default definition ("") beside non-GAAP, or no unit
    beside people. The list links each; the default one's link must open that key (its
    value, its form), not the list again - the link drops definition=/unit= because
    they are empty, and the page reads an absent and an empty one alike (any)."""
    http = review["http"]
    listing = http.get("/key", params={"entity": "E", "attribute": attribute, "period": "2015-12-31"})
    assert listing.status_code == 200 and "pick one" in listing.text
    links = _links(listing, "/key?")
    assert len(links) == 2
    for link in links:
        page = http.get(link)
        assert page.status_code == 200 and 'id="value"' in page.text, (link, _text(page.text)[:300])
    assert _value(http.get(links[0] + "&cutoff=2016-05-09")) == shown  # before the restatement
    # the key page's own form (hidden unit and definition) answers the same key again
    again = http.get(links[0] + "&cutoff=2016-05-11")
    form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', again.text))
    page = http.get("/key", params={**form, "cutoff": "2016-05-11", "known_at": ""})
    assert 'id="value"' in page.text and _value(page) == ("90 USD" if attribute == "rev" else shown)



def test_a_screen_of_a_definition_opens_as_a_panel_of_it(review):
    """A screen of the non-GAAP revenue (120) offers "as a panel": the panel must show
    that definition's figures too, not the default definition's (100, then 90)."""
    http = review["http"]
    screen = http.get("/screen", params={"attribute": "rev", "frame": "CY2015Q4I", "definition": "non-GAAP",
                                         "cutoff": "2016-05-11"})
    assert screen.status_code == 200 and "120 USD" in _text(screen.text.split('id="screen"', 1)[1])
    link = next(x for x in _links(screen, "/panel?"))
    panel = http.get(link)
    assert panel.status_code == 200, _text(panel.text)[-300:]
    cells = _text(panel.text.split('id="panel"', 1)[1].split("</table>", 1)[0])
    assert "120" in cells and "90" not in cells and "100" not in cells, (link, cells)


def test_a_screens_form_keeps_its_definition(review):
    """A screen of the non-GAAP revenue (120), asked again from its own form at another
    cutoff: the answer must stay the non-GAAP one, not fall back to the default
    definition's (90) because the form has no field for it."""
    http = review["http"]
    screen = http.get("/screen", params={"attribute": "rev", "frame": "CY2015Q4I", "definition": "non-GAAP",
                                         "cutoff": "2016-05-11"})
    form = screen.text.split('<form method="get" autocomplete="off" action="/screen"', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'<input[^>]*name="(\w+)"[^>]*value="([^"]*)"', form))
    again = http.get("/screen", params={**fields, "cutoff": "2016-06-30"})
    assert again.status_code == 200
    rows = _text(again.text.split('id="screen"', 1)[1].split("</table>", 1)[0])
    assert "120 USD" in rows and "90 USD" not in rows, (fields, rows)

# ---------------------------------------------------------------- search


def test_search_shows_the_filings_of_every_side_of_a_conflict(review):
    """A conflicted key's hit shows both values: its sources column must name both
    filings, not only the first candidate's (as if one filing stood behind both)."""
    page = review["http"].get("/", params={"q": "cost", "type": "fact"})
    assert page.status_code == 200
    row = next(r for r in page.text.split('<tr class="conflicted">')[1:])
    row = row.split("</tr>", 1)[0]
    assert "5 USD" in _text(row) and "6 USD" in _text(row)
    sources = {urllib.parse.parse_qs(urllib.parse.urlsplit(x).query)["id"][0] for x in _links(page, "/source?")}
    assert sources == {"one", "two"}


def test_an_entitys_memories_link_keeps_the_searchs_times(review):
    """Searching for the entity's id as of 2016-05-09 offers "its memories": the link
    must search at that cutoff too (the 10-K's 100), not as of now (the restated 90)."""
    http = review["http"]
    page = http.get("/", params={"q": "E", "cutoff": "2016-05-09", "known_at": "2099-01-01T00:00:00Z"})
    assert page.status_code == 200 and "Entity E" in page.text
    link = next(x for x in _links(page, "/?") if "entity=E" in x)
    asked = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)
    assert asked.get("cutoff") == ["2016-05-09"] and asked.get("known_at") == ["2099-01-01T00:00:00Z"], link
    hits = _text(http.get(link).text.split('class="hits"', 1)[1])
    assert "100 USD" in hits and "90 USD" not in hits



@pytest.mark.parametrize("q", ["the of", "!!!", " ".join(f"w{i}" for i in range(300))])
def test_a_search_text_refused_names_the_field_it_was_typed_in(review, q):
    """Only stop words, only punctuation, or too many words: the search refuses the
    text, and the page must name the field the analyst typed it in (q), not the API's
    argument (text), which is no field of the page."""
    page = review["http"].get("/", params={"q": q})
    assert page.status_code == 400
    error = _text(page.text.split('id="error"', 1)[1].split("</p>", 1)[0]).strip(" >")
    assert error.startswith("q: "), error


def test_a_searchs_form_keeps_its_limit(review):
    """A search asked for one hit (limit=1), asked again from its own form at another
    cutoff: it must still return one hit, not the default 20."""
    http = review["http"]
    page = http.get("/", params={"q": "rev", "type": "fact", "limit": "1"})
    assert page.status_code == 200 and page.text.count("<tr class=") == 1
    form = page.text.split('<form method="get" autocomplete="off" action="/"', 1)[1].split("</form>", 1)[0]
    fields = [(n, v) for n, v in re.findall(r'<input[^>]*name="(\w+)"[^>]*value="([^"]*)"', form) if n != "type"]
    again = http.get("/", params=[*fields, ("type", "fact"), ("cutoff", "2016-05-11")])
    assert again.status_code == 200 and again.text.count("<tr class=") == 1, fields

# ---------------------------------------------------------------- agent memory


def test_a_candidate_fact_shows_its_whole_period(review):
    """A candidate for a year's figure (2019-01-01..2019-12-31) waits in the queue: the
    reviewer must see that period, not its end alone (an instant's key, another one)."""
    mem, d = review["mem"], Scope(tenant=f"test-review-ui-queue-{uuid.uuid4().hex[:12]}")
    mem.put_entity(d, Entity(id="E"))
    mem.remember_fact(d, FactIn(entity="E", attribute="staff", unit="people", value=Decimal(7),
                                period=Period(start=dt.date(2019, 1, 1), end=dt.date(2019, 12, 31))))
    http = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1", raise_server_exceptions=False)
    queue = _text(http.get("/agent").text.split('id="candidates"', 1)[1].split("</table>", 1)[0])
    assert "E staff 2019-01-01..2019-12-31 = 7 people" in queue, queue


# ---------------------------------------------------------------- lineage


def test_lineage_of_an_erased_version_shows_it_erased(review):
    """An erased input and the derived figure erased with it: the drawing must not show
    an empty value (" = USD"), and the header no authority "None"."""
    http = review["http"]
    up = http.get("/lineage", params={"version": review["derived"].version_id})
    assert up.status_code == 200
    drawn = up.text.split('<svg class="graph"', 1)[1].split("</svg>", 1)[0]
    subs = [_text(t).strip() for t in re.findall(r'<text class="sub"[^>]*>(.*?)</text>', drawn)]
    facts = [t for t in subs if t.startswith("2015-12-31")]
    assert len(facts) == 2 and all("[erased]" in t for t in facts), subs
    header = _text(up.text.split("</h1>", 1)[1].split("</p>", 1)[0])
    assert "[erased]" in header and "None" not in header


def test_lineage_turns_direction_from_a_later_page(review, monkeypatch):
    """Upstream of the derived figure lists two fact versions (itself and its input),
    downstream one. On upstream's page 2 the "downstream" link must open downstream's
    first page, not carry page=2 into a list of one page (a 400)."""
    from graphmem.ui import pages

    monkeypatch.setattr(pages, "ROWS_PER_PAGE", 1)
    http = review["http"]
    up = http.get("/lineage", params={"version": review["derived"].version_id, "page": "2"})
    assert up.status_code == 200 and "page 2 of 2" in up.text
    down = next(x for x in _links(up, "/lineage?") if "direction=downstream" in x)
    page = http.get(down)
    assert page.status_code == 200, (down, _text(page.text)[-300:])
    assert "Lineage downstream" in page.text


def _filed_again_after(mem, name: str):
    """A version filed by k, then - after the time returned - by a second filing "later"
    of the same value (the version gains evidence): its scope, the version and that time."""
    d = Scope(tenant=f"test-review-ui-{name}-{uuid.uuid4().hex[:12]}")
    mem.put_entity(d, Entity(id="E"))
    _filing(mem, d, "k", (2, 24))
    version = _fact(mem, d, "rev", 100, "k")
    at = mem.server_now()
    _filing(mem, d, "later", (3, 1))
    _fact(mem, d, "rev", 100, "later")
    return d, version, at


def test_an_impacts_rows_link_the_lineage_as_recorded_by_its_known_at(review):
    """A filing's impact as recorded by T lists the version it evidences; the version is
    evidenced by a second filing only after T. The row's lineage link must show the
    lineage as recorded by T too (as the drawn node's link does), not as of now with a
    filing the impact preview never knew."""
    mem = review["mem"]
    d, version, at = _filed_again_after(mem, "impact")
    http = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1", raise_server_exceptions=False)
    page = http.get("/source", params={"id": "k", "known_at": at.isoformat()})
    assert page.status_code == 200
    table = page.text.split("<th>what</th>", 1)[1].split("</table>", 1)[0]
    row = next(x.replace("&amp;", "&") for x in re.findall(r'href="(/lineage\?[^"]*)"', table))
    assert version.version_id in row
    lineage = http.get(row)
    assert lineage.status_code == 200
    drawn = lineage.text.split('<svg class="graph"', 1)[1].split("</svg>", 1)[0]
    assert "source?id=k" in drawn and "source?id=later" not in drawn, row


def test_a_lineage_as_recorded_by_a_known_at_names_the_filings_known_then(review):
    """A version filed by k, then (after T) by a second filing of the same value: its
    lineage as recorded by T (Memory.lineage leaves out evidence recorded later) must
    not name the later filing in its header or its rows either - the page would say
    the version stood on a filing the drawing, and the API, say was not known yet."""
    mem = review["mem"]
    d, version, at = _filed_again_after(mem, "known")
    assert "s:later" not in mem.lineage(d, version.version_id, known_at=at)
    http = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1", raise_server_exceptions=False)
    page = http.get("/lineage", params={"version": version.version_id, "known_at": at.isoformat()})
    assert page.status_code == 200 and "source?id=k" in page.text
    assert "source?id=later" not in page.text
    assert "source?id=later" in http.get("/lineage", params={"version": version.version_id}).text


def test_a_lineage_as_recorded_before_a_retraction_shows_its_filing_live(review):
    """A filing retracted after T: the lineage as recorded by T must not mark it
    retracted (as_of at T still reads the version it files); as of now it must."""
    mem, d = review["mem"], Scope(tenant=f"test-review-ui-retract-{uuid.uuid4().hex[:12]}")
    mem.put_entity(d, Entity(id="E"))
    _filing(mem, d, "k", (2, 24))
    version = _fact(mem, d, "rev", 100, "k")
    at = mem.server_now()
    mem.retract_source(d, "k", reason="withdrawn")
    assert mem.as_of(d, entity="E", attribute="rev", period=YEAR_END, unit="USD", cutoff=at, known_at=at).version
    http = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1", raise_server_exceptions=False)
    marked = lambda page: re.findall(r'<a href="/source\?id=k" class="retracted"', page.text)  # noqa: E731
    then = http.get("/lineage", params={"version": version.version_id, "known_at": at.isoformat()})
    assert then.status_code == 200 and "source?id=k" in then.text and not marked(then)
    assert marked(http.get("/lineage", params={"version": version.version_id}))


def test_an_impacts_derivation_links_keep_its_known_at(review):
    """Withdrawing k as recorded by T reaches derivation D (k's figure doubled); D's
    output is derived again only after T. Every link to D's own impact on that page
    (drawn node, recompute order, table row) must open it as recorded by T, not as of
    now with the later derivation the preview never knew."""
    mem, d = review["mem"], Scope(tenant=f"test-review-ui-chain-{uuid.uuid4().hex[:12]}")
    mem.put_entity(d, Entity(id="E"))
    _filing(mem, d, "k", (2, 24))
    version = _fact(mem, d, "rev", 100, "k")

    def double(name, of):
        return mem.derive(d, method="double", method_version="1", params={}, inputs={"x": of.version_id},
                          output=FactIn(entity="E", attribute=name, unit="USD", value=2 * of.value, period=YEAR_END))
    twice = double("twice", version)
    at = mem.server_now()
    double("four_times", twice)
    http = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1", raise_server_exceptions=False)
    page = http.get("/source", params={"id": "k", "known_at": at.isoformat()})
    assert page.status_code == 200 and "four_times" not in page.text
    links = _links(page, "/source?id=derivation")
    assert len(links) == 3, links
    for link in links:
        impact = http.get(link)
        assert impact.status_code == 200 and "twice" in impact.text
        assert "four_times" not in impact.text, link


def test_a_lineages_links_to_a_sources_impact_keep_its_known_at(review):
    """The lineage of k's figure as recorded by T links k (its drawn node, "impact of
    its first source"); the figure is derived from only after T. Those links must open
    k's impact as recorded by T, not as of now with a derivation the lineage never knew."""
    mem, d = review["mem"], Scope(tenant=f"test-review-ui-origin-{uuid.uuid4().hex[:12]}")
    mem.put_entity(d, Entity(id="E"))
    _filing(mem, d, "k", (2, 24))
    version = _fact(mem, d, "rev", 100, "k")
    at = mem.server_now()
    mem.derive(d, method="double", method_version="1", params={}, inputs={"x": version.version_id},
               output=FactIn(entity="E", attribute="twice", unit="USD", value=Decimal(200), period=YEAR_END))
    http = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1", raise_server_exceptions=False)
    page = http.get("/lineage", params={"version": version.version_id, "known_at": at.isoformat()})
    assert page.status_code == 200
    links = [x for x in _links(page, "/source?id=k") if "derivation" not in x]
    assert len(links) >= 2, links
    for link in links:
        impact = http.get(link)
        assert impact.status_code == 200 and "twice" not in impact.text, link


def test_a_source_read_at_depth_0_still_counts_what_it_evidences(review):
    """depth=0 cuts the impact preview before its first step: the header's "It evidences
    N fact versions directly" must still count the versions the filing evidences, not
    claim 0 (the 10-K files five)."""
    http = review["http"]
    said = lambda page: _text(re.search(r"<p>It evidences.*?</p>", page.text).group(0)).strip()  # noqa: E731
    full = http.get("/source", params={"id": "k"})
    assert said(full) == "It evidences 5 fact versions directly."
    cut = http.get("/source", params={"id": "k", "depth": "0"})
    assert cut.status_code == 200 and said(cut) == said(full)


# ---------------------------------------------------------------- times


@pytest.mark.parametrize(("cutoff", "shown"), [("0001-01-01T00:00:00Z", "0001-01-01 00:00:00Z"),
                                               ("0999-12-31", "0999-12-31 23:59:59Z")])
def test_far_past_times_read_with_four_digit_years(review, cutoff, shown):
    """A cutoff before the year 1000 is accepted and answered; the page must say which
    (``strftime('%Y')`` writes year 1 as "1")."""
    page = review["http"].get("/key", params={"entity": "E", "attribute": "cost", "period": "2015-12-31",
                                              "cutoff": cutoff})
    assert page.status_code == 200
    answer = _text(page.text.split('id="answer"', 1)[1].split("</p>", 1)[0])
    assert f"as of cutoff {shown}" in answer


def test_a_filing_public_at_the_first_instant_draws_its_key(review):
    """A filing public at 0001-01-01T00:00:00Z is accepted by the API: its key's page
    must answer (the plot's first column picks "a second before the first tick", which
    does not exist), not fail with a server error."""
    mem, d = review["mem"], Scope(tenant=f"test-review-ui-first-{uuid.uuid4().hex[:12]}")
    mem.put_entity(d, Entity(id="E"))
    mem.record_source(d, Source(id="tablet", kind="tablet", authority="primary", publisher="scribe",
                                available_by=dt.datetime(1, 1, 1, tzinfo=UTC)))
    mem.assert_fact(d, FactIn(entity="E", attribute="grain", unit="", value=Decimal(1),
                              period=Period(end=dt.date(1, 1, 1)), sources=("tablet",)))
    http = TestClient(build_app(mem, scope=d), base_url="http://127.0.0.1", raise_server_exceptions=False)
    page = http.get("/key", params={"entity": "E", "attribute": "grain"})
    assert page.status_code == 200, _text(page.text)[-300:]
    assert _value(page) == "1"
    picks = re.search(r"data-x='([^']*)'", page.text).group(1)
    assert picks.startswith('["0001-01-01T00:00:00Z"'), picks


# ---------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def served_review(review):
    """The review tenant on loopback, one uvicorn server for the module."""
    with serving(build_app(review["mem"], scope=review["scope"])) as url:
        yield url


def test_browser_back_shows_the_times_its_answer_is_for(browser, served_review):  # noqa: F811
    """Ask at 2016-05-09 (the 10-K's 100), then at 2016-05-11 (the restated 90), then go
    back: the page answers 100 again, and its form must say 2016-05-09 - not the
    2016-05-11 the browser restores into the field it left."""
    context = browser.new_context(viewport={"width": 1100, "height": 860})
    context.set_default_timeout(120_000)
    page = context.new_page()
    key = f"{served_review}/key?entity=E&attribute=assets&period=2015-12-31"
    page.goto(key + "&cutoff=2016-05-09")
    assert page.inner_text("#value") == "100 USD" and page.input_value("#cutoff") == "2016-05-09"
    page.fill("#cutoff", "2016-05-11")
    page.click("#pick button")
    page.wait_for_url(re.compile(r"cutoff=2016-05-11"))
    assert page.inner_text("#value") == "90 USD"
    page.go_back()
    page.wait_for_url(re.compile(r"cutoff=2016-05-09"))
    page.wait_for_load_state()
    assert page.inner_text("#value") == "100 USD"
    assert page.input_value("#cutoff") == "2016-05-09"
    # the same on a page whose form holds the times macro's fields (a screen)
    page.goto(f"{served_review}/screen?attribute=assets&period=2015-12-31&unit=USD&cutoff=2016-05-09")
    page.fill("input[name=cutoff]", "2016-05-11")
    page.click("form.filters button")
    page.wait_for_url(re.compile(r"cutoff=2016-05-11"))
    page.go_back()
    page.wait_for_url(re.compile(r"cutoff=2016-05-09$"))
    page.wait_for_load_state()
    assert "100 USD" in page.inner_text("#screen")
    assert page.input_value("input[name=cutoff]").startswith("2016-05-09")
    context.close()
