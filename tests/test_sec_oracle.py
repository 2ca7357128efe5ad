"""The SEC loader and the read rule against an independent oracle, on the real files.

Each real companyfacts fixture (Tesla, Marvell, TSMC, LPA; with its submissions file
where there is one) is loaded once per module with ``sec.load``, all four into one
tenant. The oracle below reads the same raw JSON with nothing of graphmem's: it derives
each filing's ``available_by`` (acceptance time, the New York clock quirk, the filed
date's end of day; loaders/availability.py's docstring), replays the filings in
publication order through the re-rounding rule (loaders/sec.py's docstring) and the
write rule of DESIGN.md section 3 (the value the key has at the filing's time gains
evidence, another value is a new version), and answers a read at cutoff C by the read
rule (live versions and live evidence only; one publisher, so a version drops when
another one has later live evidence; one left is active, several conflict).

Compared, per company:

* the load's counts (rows, versions, evidence, re-roundings) and every filing's Source
  (time, form, filed date);
* ``as_of`` on a sample of keys - every key with more than one distinct value in the
  file (restatements and re-roundings) and a hash-ordered sample of the others - at each
  of the key's filing times, just before each change, and for a key with one value at a
  seeded random time; status, value, the version's available_by and the evidence listed
  with its times; every other read asks its cutoff in New York time;
* ``facts_as_of`` of the whole company at a seeded random cutoff and at the end of time,
  which covers every key of the file;
* ``history`` (both axes) of a sample of restated keys, and as of a ``known_at`` just
  before the company's load (nothing of it);
* ``panel`` (its own read path: one read per stretch between evidence times) for a
  sample of restated attributes, every frame of their keys, at each filing time of the
  attribute and just before it, against the oracle's read of the key the documented
  frame rule chooses; and ``screen`` on a few of those cells.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from graphmem.loaders import sec

from graphmem import Period, Scope

UTC = dt.UTC
NY = ZoneInfo("America/New_York")
FIXTURES = Path(__file__).parent / "fixtures"
COMPANIES = {
    "tesla": ("companyfacts-CIK0001318605-tesla.json", "submissions-CIK0001318605-tesla.json"),
    "marvell": ("companyfacts-CIK0001835632-marvell.json", "submissions-CIK0001835632-marvell.json"),
    "tsmc": ("companyfacts-CIK0001046179-tsmc.json", "submissions-CIK0001046179-tsmc.json"),
    "lpa": ("companyfacts-CIK0001997711-lpa.json", None),
}
#: Keys sampled per company besides the ones with several values: at least this many
#: others, and more for a small file, up to SAMPLE keys in all.
OTHERS, SAMPLE = 100, 250
TICK = dt.timedelta(microseconds=1)
END_OF_TIME = dt.datetime(2100, 1, 1, tzinfo=UTC)


# ---------------------------------------------------------------- the oracle: times


def end_of_filed_day(day: dt.date) -> dt.datetime:
    """The filed date's last microsecond in New York, in UTC."""
    return dt.datetime(day.year, day.month, day.day, 23, 59, 59, 999999, tzinfo=NY).astimezone(UTC)


def in_edgar_hours(moment: dt.datetime) -> bool:
    """EDGAR accepts filings from 06:00 to 22:00 New York time."""
    return dt.time(6) <= moment.astimezone(NY).time() < dt.time(22)


def readings(text: str) -> tuple[dt.datetime, dt.datetime]:
    """A ``...Z`` acceptance time read as UTC and read as New York wall-clock time."""
    wall = dt.datetime.fromisoformat(text.removesuffix("Z")).replace(tzinfo=None)
    return wall.replace(tzinfo=UTC), wall.replace(tzinfo=NY).astimezone(UTC)


def new_york_sign(text: str) -> bool:
    """Read as UTC the time is outside EDGAR's hours, read as New York inside them."""
    as_utc, as_ny = readings(text)
    return not in_edgar_hours(as_utc) and in_edgar_hours(as_ny)


def acceptance_times(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    recent = json.loads(path.read_text())["filings"]["recent"]
    return {a: t for a, t in zip(recent["accessionNumber"], recent["acceptanceDateTime"], strict=True) if t}


def filing_time(accession: str, filed: dt.date, accepted: dict[str, str], ny_clock: bool) -> dt.datetime:
    """available_by of one filing, by availability.py's docstring."""
    text = accepted.get(accession)
    if text is None:
        return end_of_filed_day(filed)
    assert text.endswith("Z"), f"the oracle reads only the submissions' Z times, got {text!r}"
    as_utc, as_ny = readings(text)
    quirk = ny_clock or as_utc.time() < dt.time(6) or new_york_sign(text)
    when = as_ny if quirk else as_utc
    if not in_edgar_hours(as_utc) and not in_edgar_hours(as_ny):  # a date given as midnight
        when = max(when, end_of_filed_day(filed))
    return when


# ---------------------------------------------------------------- the oracle: facts


def trailing_zeros(value: Decimal) -> int | None:
    if value == 0 or value != value.to_integral_value():
        return None
    digits = str(abs(int(value)))
    return len(digits) - len(digits.rstrip("0"))


def usual_zeros(counts: Counter[int]) -> int:
    """The most common trailing-zero count of a filing's unit; a tie goes to the smaller."""
    if not counts:
        return 0
    best = max(counts.values())
    return min(z for z, n in counts.items() if n == best)


def is_rerounding(current: Decimal, later: Decimal, precision: int) -> bool:
    """sec.py's docstring, conditions 1-4."""
    if later == current or later == 0 or current != current.to_integral_value():
        return False
    later_zeros = trailing_zeros(later)
    if later_zeros is None:
        return False
    p = min(later_zeros, precision)
    if p < 3:
        return False
    current_zeros = trailing_zeros(current) or 0  # zero: no digits to count
    return current_zeros < p and abs(current - later) * 2 <= 10 ** p


@dataclass
class Version:
    value: Decimal
    evidence: dict[str, dt.datetime] = field(default_factory=dict)  # accession -> available_by

    @property
    def available_by(self) -> dt.datetime:
        return min(self.evidence.values())

    def live(self, cutoff: dt.datetime) -> dict[str, dt.datetime]:
        return {a: t for a, t in self.evidence.items() if t <= cutoff}


@dataclass
class Expected:
    status: str
    shown: list[tuple[Decimal, dt.datetime, dict[str, dt.datetime]]]  # value, available_by, live evidence


def kept(versions: list[Version], cutoff: dt.datetime) -> list[tuple[Version, dict[str, dt.datetime]]]:
    """DESIGN.md section 3's read rule for one publisher and one authority: of the live
    versions, those whose latest live evidence is the latest of all (a version drops
    when the publisher has later live evidence on another one)."""
    live = [(v, v.live(cutoff)) for v in versions]
    live = [(v, ev) for v, ev in live if ev]
    latest = max((max(ev.values()) for _, ev in live), default=None)
    return [(v, ev) for v, ev in live if max(ev.values()) == latest]


def read_rule(versions: list[Version], cutoff: dt.datetime) -> Expected:
    """One kept version is active, several conflict, none is not_found."""
    shown = [(v.value, v.available_by, ev) for v, ev in kept(versions, cutoff)]
    return Expected({0: "not_found", 1: "active"}.get(len(shown), "conflicted"), shown)


Key = tuple[str, str, str | None, str]  # attribute, unit, start, end


@dataclass
class Oracle:
    cik: int
    times: dict[str, dt.datetime]  # accession -> available_by
    filings: dict[str, tuple[str, str]]  # accession -> form, filed date text
    versions: dict[Key, list[Version]]
    filings_of: dict[Key, list[str]]  # accessions reporting the key, in publication order
    changes: dict[Key, set[str]]  # accessions where the key got a new version or a re-rounding
    distinct: dict[Key, int]  # distinct raw values of the key in the file
    rows: int
    rerounded: int  # rows whose value re-rounds the key's current one
    ny_clock: bool
    notes: list[str]

    def expect(self, key: Key, cutoff: dt.datetime) -> Expected:
        return read_rule(self.versions[key], cutoff)


def build_oracle(facts_path: Path, submissions_path: Path | None) -> Oracle:
    data = json.loads(facts_path.read_text(), parse_float=Decimal)
    rows: list[tuple[Key, Decimal, str]] = []
    filed: dict[str, dt.date] = {}
    forms: dict[str, tuple[str, str]] = {}
    zeros: dict[tuple[str, str], Counter[int]] = defaultdict(Counter)  # (accession, unit) -> counts
    for taxonomy, concepts in data["facts"].items():
        for concept, body in concepts.items():
            for unit, unit_rows in body["units"].items():
                for row in unit_rows:
                    value = Decimal(row["val"])
                    key = (f"{taxonomy}:{concept}", unit, row.get("start"), row["end"])
                    rows.append((key, value, row["accn"]))
                    filed[row["accn"]] = dt.date.fromisoformat(row["filed"])
                    forms[row["accn"]] = (row["form"], row["filed"])
                    z = trailing_zeros(value)
                    if z is not None:
                        zeros[row["accn"], unit][z] += 1
    accepted = acceptance_times(submissions_path)
    ny_clock = any(new_york_sign(t) for t in accepted.values())
    times = {a: filing_time(a, day, accepted, ny_clock) for a, day in filed.items()}
    order = sorted(times, key=lambda a: (times[a], a))
    by_filing: dict[str, list[tuple[Key, Decimal]]] = defaultdict(list)
    for key, value, accession in rows:  # file order within a filing
        by_filing[accession].append((key, value))
    versions: dict[Key, list[Version]] = defaultdict(list)
    filings_of: dict[Key, list[str]] = defaultdict(list)
    changes: dict[Key, set[str]] = defaultdict(set)
    current: dict[Key, Decimal] = {}
    notes: list[str] = []
    rerounded = 0
    for accession in order:
        t = times[accession]
        for key, raw in by_filing[accession]:
            value = raw
            if key in current and is_rerounding(current[key], raw, usual_zeros(zeros[accession, key[1]])):
                value = current[key]
                changes[key].add(accession)
                rerounded += 1
            current[key] = value
            if not filings_of[key] or filings_of[key][-1] != accession:
                filings_of[key].append(accession)
            # the write rule: the value the key has at t gains evidence, another is a new version
            now = kept(versions[key], t)
            same = [v for v, _ in now if v.value == value]
            if same:
                if len(now) > 1:  # DESIGN.md does not say which candidate gains it: flagged
                    notes.append(f"{key}: {value} asserted at {t} into a conflict")
                same[0].evidence.setdefault(accession, t)
            else:
                versions[key].append(Version(value, {accession: t}))
                changes[key].add(accession)
    distinct = defaultdict(set)
    for key, value, _ in rows:
        distinct[key].add(value)
    return Oracle(int(data["cik"]), times, forms, dict(versions), dict(filings_of), dict(changes),
                  {k: len(v) for k, v in distinct.items()}, len(rows), rerounded, ny_clock, notes)


def sample_keys(oracle: Oracle) -> list[Key]:
    """Every key with several values, and hash-ordered others up to the sample's size."""
    several = sorted(k for k, n in oracle.distinct.items() if n > 1)
    others = sorted((k for k, n in oracle.distinct.items() if n == 1),
                    key=lambda k: hashlib.sha256(repr(k).encode()).hexdigest())
    return several + others[:max(OTHERS, SAMPLE - len(several))]


def cutoffs_for(oracle: Oracle, key: Key, rng: random.Random) -> list[dt.datetime]:
    """At each filing time of the key (a new version, a re-rounding that keeps the value,
    or more evidence for it); just before each change (before the first filing only for a
    key with one value: a restated key's first one is as likely wrong as any); and for a
    key with one value a random time too."""
    filings = oracle.filings_of[key]
    out = {oracle.times[a] for a in filings}
    several = oracle.distinct[key] > 1
    out |= {oracle.times[a] - TICK for a in oracle.changes[key] if not several or a != filings[0]}
    if not several:
        first, last = oracle.times[filings[0]], oracle.times[filings[-1]]
        span = (last - first).total_seconds() + 400 * 86400
        out.add(first - dt.timedelta(days=30) + dt.timedelta(seconds=rng.uniform(0, span)))
    return sorted(out)


# ---------------------------------------------------------------- comparing


def seen(answer: Any) -> tuple[str, list[tuple[Decimal, dt.datetime, dict[str, dt.datetime]]]]:
    """What graphmem answered, in the oracle's shape."""
    return answer.status, sorted(
        ((v.value, v.available_by, {e.source_id: e.available_by for e in v.sources}) for v in answer.shown),
        key=lambda s: (s[0], s[1]))


def differs(expected: Expected, answer: Any, key: Key | None = None) -> str | None:
    if key is not None and any(key_of(v) != key or v.event_time != v.period.end for v in answer.shown):
        return f"answered another key or event time: {[(key_of(v), v.event_time) for v in answer.shown]}"
    status, shown = seen(answer)
    want = sorted(expected.shown, key=lambda s: (s[0], s[1]))
    if status != expected.status or len(shown) != len(want):
        return f"status {status} {[s[0] for s in shown]}, oracle {expected.status} {[s[0] for s in want]}"
    for (value, available_by, evidence), (w_value, w_available_by, w_evidence) in zip(shown, want, strict=True):
        if value != w_value:
            return f"value {value}, oracle {w_value}"
        if available_by != w_available_by:
            return f"available_by {available_by}, oracle {w_available_by}"
        if evidence != w_evidence:
            return f"evidence {sorted(evidence.items())}, oracle {sorted(w_evidence.items())}"
    return None


def period_of(key: Key) -> Period:
    start = dt.date.fromisoformat(key[2]) if key[2] else None
    return Period(start=start, end=dt.date.fromisoformat(key[3]))


def key_of(shown: Any) -> Key:
    """The key of a version, or of what an Answer shows."""
    v = shown if hasattr(shown, "period") else (shown.version or shown.candidates[0])
    return (v.attribute, v.unit, v.period.start.isoformat() if v.period.start else None, v.period.end.isoformat())


# ---------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def tenant(migrated):
    """One tenant for the four companies, as a user's memory holds them."""
    with migrated.connect() as mem:
        yield mem, Scope(tenant=f"test-sec-oracle-{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="module", params=sorted(COMPANIES))
def company(request, tenant):
    """One company loaded into the shared tenant, with its oracle and the server's time
    just before its load (what was recorded by then excludes all of it)."""
    mem, scope = tenant
    facts_name, submissions_name = COMPANIES[request.param]
    facts_path = FIXTURES / facts_name
    submissions_path = FIXTURES / submissions_name if submissions_name else None
    oracle = build_oracle(facts_path, submissions_path)
    before = mem.server_now()
    report = sec.load(mem, scope, facts_path, submissions_path)
    return {"name": request.param, "mem": mem, "scope": scope, "oracle": oracle, "report": report,
            "before": before}


def test_load_counts_and_filing_times(company):
    mem, scope, oracle, report = company["mem"], company["scope"], company["oracle"], company["report"]
    assert report.rows == oracle.rows and report.quarantined == 0
    assert report.sources == len(oracle.times)
    versions = sum(len(v) for v in oracle.versions.values())
    evidence = sum(len(v.evidence) for vs in oracle.versions.values() for v in vs)
    assert (report.versions_created, report.evidence_added, report.rerounded) == (
        versions, evidence - versions, oracle.rerounded)
    wrong = {}
    for accession, t in oracle.times.items():
        stored = mem.source(scope, accession)
        form, filed = oracle.filings[accession]
        if stored is None or (stored.available_by, stored.kind, stored.meta.get("filed")) != (t, form, filed):
            wrong[accession] = (stored and (stored.available_by, stored.kind, stored.meta.get("filed")),
                                (t, form, filed))
    assert not wrong, f"{company['name']}: source times (graphmem, oracle): {wrong}"
    assert not oracle.notes, oracle.notes


def test_known_at_before_the_load_sees_none_of_it(company):
    """The transaction-time axis on the same keys: as recorded just before the company's
    load, nothing of it is there at any cutoff; as recorded now, the oracle's answer."""
    mem, scope, oracle = company["mem"], company["scope"], company["oracle"]
    entity = f"cik:{oracle.cik}"
    for key in sample_keys(oracle)[:: max(1, len(oracle.distinct) // 400)][:20]:
        read = {"entity": entity, "attribute": key[0], "unit": key[1], "period": period_of(key),
                "cutoff": END_OF_TIME}
        assert mem.as_of(scope, **read, known_at=company["before"]).status == "not_found", key
        assert differs(oracle.expect(key, END_OF_TIME), mem.as_of(scope, **read), key) is None, key


def test_as_of_matches_the_oracle_on_sampled_keys(company):
    mem, scope, oracle = company["mem"], company["scope"], company["oracle"]
    entity = f"cik:{oracle.cik}"
    rng = random.Random(f"sec-oracle-{company['name']}")
    mismatches, compared = [], 0
    for key in sample_keys(oracle):
        period = period_of(key)
        for cutoff in cutoffs_for(oracle, key, rng):
            asked = cutoff.astimezone(NY) if compared % 2 else cutoff  # the same instant, another zone
            answer = mem.as_of(scope, entity=entity, attribute=key[0], unit=key[1], period=period, cutoff=asked)
            compared += 1
            problem = differs(oracle.expect(key, cutoff), answer, key)
            if problem:
                mismatches.append(f"{key} at {cutoff.isoformat()}: {problem}")
    print(f"\n{company['name']}: {compared} as_of reads compared, {len(mismatches)} differ")
    assert not mismatches, "\n".join(mismatches[:25])


@pytest.mark.parametrize("when", ["random", "end"])
def test_facts_as_of_matches_the_oracle_on_every_key(company, when):
    mem, scope, oracle = company["mem"], company["scope"], company["oracle"]
    times = sorted(oracle.times.values())
    rng = random.Random(f"sec-oracle-all-{company['name']}")
    cutoff = END_OF_TIME if when == "end" else times[0] + (times[-1] - times[0]) * rng.random()
    answers = {key_of(a): a for a in mem.facts_as_of(scope, entity=f"cik:{oracle.cik}", cutoff=cutoff)}
    mismatches = []
    for key in oracle.versions:
        expected = oracle.expect(key, cutoff)
        answer = answers.pop(key, None)
        if answer is None:
            if expected.status != "not_found":
                mismatches.append(f"{key}: missing, oracle {expected.status}")
            continue
        problem = differs(expected, answer)
        if problem:
            mismatches.append(f"{key}: {problem}")
    mismatches += [f"{key}: not in the file, answered {a.status}" for key, a in answers.items()]
    print(f"\n{company['name']} at {cutoff.isoformat()}: {len(oracle.versions)} keys compared, "
          f"{len(mismatches)} differ")
    assert not mismatches, "\n".join(mismatches[:25])


def test_history_matches_the_oracle_on_restated_keys(company):
    """Both time axes of every version of a seeded sample of keys with several values:
    the versions in publication order, each with its value, available_by and evidence."""
    mem, scope, oracle = company["mem"], company["scope"], company["oracle"]
    several = sorted(k for k, n in oracle.distinct.items() if n > 1)
    keys = random.Random(f"sec-oracle-history-{company['name']}").sample(several, min(40, len(several)))
    mismatches = []
    for key in keys:
        history = [v for v in mem.history(scope, entity=f"cik:{oracle.cik}", attribute=key[0],
                                          period=period_of(key)) if v.unit == key[1]]
        got = [(v.value, v.available_by, {e.source_id: e.available_by for e in v.sources}) for v in history]
        want = [(v.value, v.available_by, v.evidence) for v in oracle.versions[key]]
        if got != want:
            mismatches.append(f"{key}: {got}, oracle {want}")
        if any(v.recorded_at < history[0].recorded_at for v in history):
            mismatches.append(f"{key}: versions not in transaction-time order")
    assert not mismatches, "\n".join(mismatches[:10])


# ---------------------------------------------------------------- panels (a second read path)


def frame_of(key: Key) -> tuple[str, dt.date, dt.date] | None:
    """screen.py's frame rule, from its docstring: the frame's label, first and last day."""
    end = dt.date.fromisoformat(key[3])
    if key[2] is None:  # an instant: the nearest quarter end, the earlier when halfway
        ends = [dt.date(y, m, d) for y in (end.year - 1, end.year) for m, d in ((3, 31), (6, 30), (9, 30), (12, 31))]
        nearest = min(ends, key=lambda q: (abs((q - end).days), q))
        return f"CY{nearest.year}Q{(nearest.month - 1) // 3 + 1}I", nearest, nearest
    start = dt.date.fromisoformat(key[2])
    days = (end - start).days + 1
    middle = start + dt.timedelta(days=(days - 1) // 2)
    if 335 <= days <= 395:
        return f"CY{middle.year}", dt.date(middle.year, 1, 1), dt.date(middle.year, 12, 31)
    if 61 <= days <= 121:
        q = (middle.month - 1) // 3
        first = dt.date(middle.year, 3 * q + 1, 1)
        last = (dt.date(middle.year + (q == 3), (3 * q + 3) % 12 + 1, 1)) - dt.timedelta(days=1)
        return f"CY{middle.year}Q{q + 1}", first, last
    return None


def chosen_key(oracle: Oracle, keys: list[Key], first: dt.date, last: dt.date, cutoff: dt.datetime) -> Key | None:
    """screen.py's choice: of the frame's keys public at the cutoff (active or conflicted),
    the best fit, then the one with the most recently public evidence, then by period text."""
    public = [(k, oracle.expect(k, cutoff)) for k in keys]
    public = [(k, e) for k, e in public if e.status != "not_found"]
    if not public:
        return None

    def rank(item: tuple[Key, Expected]) -> tuple[int, float, str]:
        k, e = item
        start = dt.date.fromisoformat(k[2]) if k[2] else None
        end = dt.date.fromisoformat(k[3])
        fit = abs((end - last).days) + (abs((start - first).days) if start else 0)
        latest = max(t for _, _, evidence in e.shown for t in evidence.values())
        return fit, -latest.timestamp(), period_of(k).text

    return min(public, key=rank)[0]


def test_panel_matches_the_oracle_on_restated_attributes(company):
    """``panel`` reads each key once per stretch between its evidence times: every cell,
    at each filing time of the attribute and just before it, is the oracle's read of
    the key the frame rule chooses; and ``screen`` answers a few of its cells alike."""
    mem, scope, oracle = company["mem"], company["scope"], company["oracle"]
    entity = f"cik:{oracle.cik}"
    pairs = sorted({(k[0], k[1]) for k, n in oracle.distinct.items() if n > 1 and frame_of(k)})
    mismatches, cells = [], 0
    for attribute, unit in random.Random(f"sec-oracle-panel-{company['name']}").sample(pairs, min(8, len(pairs))):
        keys = [k for k in oracle.versions if (k[0], k[1]) == (attribute, unit) and frame_of(k)]
        frames: dict[str, list[Key]] = defaultdict(list)
        for k in keys:
            frames[frame_of(k)[0]].append(k)
        times = {oracle.times[a] for k in keys for a in oracle.filings_of[k]}
        cutoffs = sorted(times | {t - TICK for t in times})
        panel = mem.panel(scope, attribute=attribute, unit=unit, frames=sorted(frames), cutoffs=cutoffs,
                          entities=[entity])
        for cell in panel.cells:
            cells += 1
            label, first, last = frame_of(frames[cell.frame][0])
            want = chosen_key(oracle, frames[cell.frame], first, last, cell.cutoff)
            where = f"{attribute} [{unit}] {cell.frame} at {cell.cutoff.isoformat()}"
            if want is None:
                if cell.status != "not_found":
                    mismatches.append(f"{where}: {cell.status} {cell.period}, oracle not_found")
                continue
            problem = differs(oracle.expect(want, cell.cutoff), cell.answer, want)
            if problem or cell.period != period_of(want):
                mismatches.append(f"{where}: {cell.period} {problem}, oracle key {want}")
        assert len(panel.cells) == len(frames) * len(cutoffs)
        rng = random.Random(f"{company['name']}-{attribute}-{unit}")
        for frame, cutoff in [(rng.choice(sorted(frames)), rng.choice(cutoffs)) for _ in range(3)]:
            screen = mem.screen(scope, attribute=attribute, unit=unit, frame=frame, cutoff=cutoff, entities=[entity])
            cell = panel.cell(entity, cutoff, frame)
            if cell is None or seen(screen.answers[0]) != seen(cell.answer):  # known_at differs
                mismatches.append(f"{attribute} [{unit}] {frame} at {cutoff.isoformat()}: screen "
                                  f"{screen.answers[0].status} {screen.answers[0].value}, panel "
                                  f"{cell and cell.status} {cell and cell.value}")
    print(f"\n{company['name']}: {cells} panel cells compared, {len(mismatches)} differ")
    assert not mismatches, "\n".join(mismatches[:25])
